;; recurse.wasm: a plugin whose classify and shape never finish. The first
;; call on an instance (every call: a call past its deadline closes its
;; instance) runs $rec 40 levels deep, two calls per level: 2^40 calls and
;; no loop, so a deadline checked only at loop back-edges never fires.
;; TestRecurseTestdata in ../deadline_test.go keeps recurse.wasm equal to
;; what this text describes (run it with -update after a change).
(module
  (memory (export "memory") 2)
  (data (i32.const 64) "{\"risk\":\"write\",\"reason\":\"test module\"}")
  (func (export "voltmcp_abi_v1"))
  (func (export "voltmcp_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "voltmcp_free") (param i32 i32))
  (func $call (export "classify") (param i32 i32) (result i64)
    (if (i32.eqz (i32.load (i32.const 8)))
      (then
        (i32.store (i32.const 8) (i32.const 1))
        (call $rec (i32.const 40))))
    (i64.const 0x0000004000000027)) ;; ptr 64, len 39
  (func (export "shape") (param i32 i32) (result i64)
    (if (i32.eqz (i32.load (i32.const 8)))
      (then
        (i32.store (i32.const 8) (i32.const 1))
        (call $rec (i32.const 40))))
    (i64.const 0x0000004000000027))
  (func $rec (param $n i32)
    (if (local.get $n)
      (then
        (call $rec (i32.sub (local.get $n) (i32.const 1)))
        (call $rec (i32.sub (local.get $n) (i32.const 1)))))))
