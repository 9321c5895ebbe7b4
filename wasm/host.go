package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Defaults for the zero values of Options.
const (
	// DefaultMemoryPages is 512 pages of 64 KiB: 32 MiB per instance.
	DefaultMemoryPages = 512
	// DefaultTimeout bounds one classify or shape call. It is a guard
	// against hung guests, not a latency target: the built-in shaper needs
	// tens of milliseconds for the ShapeInputFactor-times-cap input a Chain
	// gives it.
	DefaultTimeout = time.Second
	// DefaultIdleInstances is Options.IdleInstances when it is zero.
	DefaultIdleInstances = 8
	// MaxDefaultPoolSize caps the default pool size, which is otherwise
	// GOMAXPROCS.
	MaxDefaultPoolSize = 4
)

// maxMemoryPages is the most pages a wasm32 memory has: 4 GiB.
const maxMemoryPages = 65536

// instantiateTimeout bounds starting one instance (the guest's
// _initialize), which is slower than a call for guests with a runtime.
const instantiateTimeout = 5 * time.Second

// stderrCap is how much of a guest's stdout and stderr an instance keeps
// per call, for diagnostics.
const stderrCap = 4 << 10

// Options configures a Host. The zero value is ready to use.
type Options struct {
	// CacheDir is the directory of wazero's compilation cache, so a
	// module compiled by an earlier process loads in milliseconds. ""
	// keeps compiled code in memory only.
	CacheDir string
	// MemoryPages bounds the linear memory of every instance of a module
	// loaded without LoadOptions.MemoryPages (the built-in module among
	// them), in 64 KiB pages. Zero means DefaultMemoryPages.
	MemoryPages uint32
	// Timeout bounds one classify or shape call of a module loaded
	// without LoadOptions.Timeout (the built-in module among them),
	// allocation and copies included, for any shape of guest code (see
	// Host). Starting the call's instance is bounded apart, by the larger
	// of the timeout and five seconds. Zero means DefaultTimeout.
	Timeout time.Duration
	// PoolSize bounds the calls one module runs at once. Zero means
	// GOMAXPROCS, at most MaxDefaultPoolSize.
	PoolSize int
	// IdleInstances bounds the instances one module keeps idle for its
	// servers' next calls; past it, the one idle longest is closed. An
	// instance serves one server only, so the bound should exceed the
	// servers whose tools are classified at once (discovery rates a
	// server's tools one after the other), or each call starts a fresh
	// instance. Each idle instance holds its linear memory (the built-in
	// Go classifier about 6 MB). Zero means DefaultIdleInstances.
	IdleInstances int
	// OnFault, when not nil, is called with every fault that closed an
	// instance or kept a module from running (see Fault), after the
	// instance is closed and before the call returns. It must be safe for
	// concurrent use and should not block.
	OnFault func(Fault)
}

// LoadOptions configures one module for [Host.Load]. The zero value pins
// nothing and takes the Host's limits; a nil *LoadOptions is the zero
// value.
type LoadOptions struct {
	// SHA256 pins the module's content: when not empty, the module's
	// SHA-256 must equal it (hex, case-insensitive) or Load refuses the
	// module with a *PinError.
	SHA256 string
	// MemoryPages bounds the linear memory of every instance of the
	// module, in 64 KiB pages: a memory.grow past it fails, and a module
	// that declares more initial memory is refused. Zero means
	// Options.MemoryPages.
	MemoryPages uint32
	// Timeout bounds one classify or shape call of the module, as
	// Options.Timeout does for the Host's. Zero means Options.Timeout.
	Timeout time.Duration
}

// PinError is the error of [Host.Load] for a module whose content does
// not match its LoadOptions.SHA256.
type PinError struct {
	// Module is the name the module was to be loaded under.
	Module string
	// SHA256 is the hex SHA-256 of the module's bytes.
	SHA256 string
	// Pin is the digest it was pinned to.
	Pin string
}

func (e *PinError) Error() string {
	return fmt.Sprintf("wasm: module %s: sha256 %s does not match its pin %s", e.Module, e.SHA256, e.Pin)
}

// FaultKind says how a plugin call failed.
type FaultKind string

// Fault kinds. The first six are reported through Options.OnFault.
const (
	// FaultTrap: the guest trapped (unreachable, out-of-bounds access,
	// stack overflow, ...) or exited.
	FaultTrap FaultKind = "trap"
	// FaultDeadline: the call ran past its module's timeout
	// (LoadOptions.Timeout, else Options.Timeout) or the caller's
	// deadline.
	FaultDeadline FaultKind = "deadline"
	// FaultMemory: the guest ran out of memory under its module's page
	// limit, or its allocator returned nothing.
	FaultMemory FaultKind = "memory"
	// FaultMalformed: the result was not valid JSON of the right shape,
	// or pointed outside the guest's memory.
	FaultMalformed FaultKind = "malformed"
	// FaultOversized: the result was larger than MaxClassifyOutput or
	// MaxShapeOutput, or the input would not fit the memory limit.
	FaultOversized FaultKind = "oversized"
	// FaultUnavailable: the module could not be compiled or instantiated.
	FaultUnavailable FaultKind = "unavailable"

	// FaultCanceled: the caller's context was canceled. The instance is
	// closed, but the module is not to blame, so OnFault is not called.
	FaultCanceled FaultKind = "canceled"
	// FaultUnsupported: the module does not export the function called.
	FaultUnsupported FaultKind = "unsupported"
	// FaultClosed: the Host was closed.
	FaultClosed FaultKind = "closed"
	// FaultInput: the input could not be encoded (invalid raw JSON).
	FaultInput FaultKind = "input"
)

// Fault is the error of a failed classify or shape call.
type Fault struct {
	// Module is the name of the module that failed.
	Module string
	// Kind says how it failed.
	Kind FaultKind
	// Err is the underlying error.
	Err error
	// Output is the start of what the guest wrote to stdout and stderr
	// during the call (at most 4 KiB), often the panic message of a guest
	// with a runtime.
	Output string
}

func (f *Fault) Error() string {
	return fmt.Sprintf("wasm module %s: %s: %v", f.Module, f.Kind, f.Err)
}

func (f *Fault) Unwrap() error { return f.Err }

// reported reports whether OnFault hears of this kind.
func (k FaultKind) reported() bool {
	switch k {
	case FaultCanceled, FaultUnsupported, FaultClosed, FaultInput:
		return false
	}
	return true
}

// Host runs plugin modules in one wazero runtime. It is safe for
// concurrent use. Each module has its own memory limit and call timeout
// (LoadOptions); the Host's Options give the defaults.
//
// A call's deadline holds whatever the guest's code looks like: wazero
// closes a module whose call context is done, but notices only at loop
// back-edges, so Load adds a check at the entry of every function as
// well (an empty loop), and recursion or a fan-out of calls cannot run
// past the deadline either.
type Host struct {
	rt       wazero.Runtime
	cache    wazero.CompilationCache
	memPages uint32
	timeout  time.Duration
	poolSize int
	idleMax  int
	onFault  func(Fault)

	builtinOnce sync.Once
	builtin     *Module
	builtinErr  error

	mu     sync.Mutex
	closed bool
}

// wazeroInit serializes the making of wazero runtimes and caches (see
// NewHost): the one lock of this package that is not a Host's, for a
// global of wazero's.
var wazeroInit sync.Mutex

// NewHost starts a wazero runtime with the compiler engine where the
// platform has one, termination on context done and the compilation
// cache, and instantiates WASI into it. The memory limits are each
// module's: Load writes a module's limit into the module as the maximum
// of its memory, so one runtime holds modules of different limits.
func NewHost(ctx context.Context, opts *Options) (*Host, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MemoryPages == 0 {
		o.MemoryPages = DefaultMemoryPages
	}
	if o.MemoryPages > maxMemoryPages {
		return nil, fmt.Errorf("wasm: memory pages %d over the wasm32 maximum of %d", o.MemoryPages, maxMemoryPages)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.PoolSize <= 0 {
		o.PoolSize = min(runtime.GOMAXPROCS(0), MaxDefaultPoolSize)
	}
	if o.IdleInstances <= 0 {
		o.IdleInstances = DefaultIdleInstances
	}
	// wazero looks up its own version, for the cache's directory and the
	// compiler, into a global it writes without synchronization: hosts
	// made at once (two engines, a guard replaced while the last one is
	// preparing) would race on it.
	wazeroInit.Lock()
	defer wazeroInit.Unlock()
	var cache wazero.CompilationCache
	if o.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(o.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	cfg := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(maxMemoryPages).
		WithCompilationCache(cache)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("wasm: instantiate wasi: %w", err)
	}
	return &Host{rt: rt, cache: cache, memPages: o.MemoryPages, timeout: o.Timeout,
		poolSize: o.PoolSize, idleMax: o.IdleInstances, onFault: o.OnFault}, nil
}

// Close closes every instance and compiled module and the runtime. Calls
// in flight fail with a fault; later calls fail with FaultClosed.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	err := h.rt.Close(ctx)
	if cerr := h.cache.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("wasm: close: %w", err)
	}
	return nil
}

func (h *Host) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// BuiltinName is the name of the built-in module.
const BuiltinName = "builtin"

// Builtin returns the built-in module, which both classifies and shapes.
// It is checked on the first call and compiled on its first use.
func (h *Host) Builtin(ctx context.Context) (*Module, error) {
	h.builtinOnce.Do(func() {
		sum := sha256.Sum256(builtinWasm)
		// The built-in module's bytes are part of the program: the module
		// keeps them, not an instrumented copy, until it compiles.
		h.builtin, h.builtinErr = h.load(BuiltinName, builtinWasm, &LoadOptions{SHA256: hex.EncodeToString(sum[:])}, true)
	})
	return h.builtin, h.builtinErr
}

// Load checks a module and returns it, ready to compile on its first call
// (or on [Module.Compile]). A module whose SHA-256 does not match
// opts.SHA256 is refused with a *PinError. Load checks the imports, the
// exports and their signatures, the ABI version marker and the memory
// against the module's page limit, without compiling the module or
// running any of its code. A nil opts is the zero LoadOptions.
func (h *Host) Load(_ context.Context, name string, wasm []byte, opts *LoadOptions) (*Module, error) {
	return h.load(name, wasm, opts, false)
}

// load is Load. With program, wasm is bytes of the program itself (the
// built-in module), which nothing changes: the module keeps them and
// instruments them again when it compiles, rather than keeping the
// instrumented copy that a module loaded from a caller's bytes keeps
// until it compiles.
func (h *Host) load(name string, wasm []byte, opts *LoadOptions, program bool) (*Module, error) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	if h.isClosed() {
		return nil, fmt.Errorf("wasm: load %s: host closed", name)
	}
	if o.MemoryPages == 0 {
		o.MemoryPages = h.memPages
	}
	if o.MemoryPages > maxMemoryPages {
		return nil, fmt.Errorf("wasm: module %s: memory pages %d over the wasm32 maximum of %d", name, o.MemoryPages, maxMemoryPages)
	}
	if o.Timeout <= 0 {
		o.Timeout = h.timeout
	}
	sum := sha256.Sum256(wasm)
	got := hex.EncodeToString(sum[:])
	if o.SHA256 != "" && !strings.EqualFold(strings.TrimSpace(o.SHA256), got) {
		return nil, &PinError{Module: name, SHA256: got, Pin: o.SHA256}
	}
	sh, err := inspect(wasm, o.MemoryPages)
	if err != nil {
		return nil, fmt.Errorf("wasm: module %s: %w", name, err)
	}
	bin, err := instrument(wasm, o.MemoryPages)
	if err != nil {
		return nil, fmt.Errorf("wasm: module %s: %w", name, err)
	}
	m := &Module{host: h, name: name, sum: got, bin: bin, sh: sh, memPages: o.MemoryPages, timeout: o.Timeout,
		sem: make(chan struct{}, h.poolSize)}
	if program {
		m.src, m.bin = wasm, nil
	}
	return m, nil
}

// Module is one loaded plugin. It is safe for concurrent use. An instance
// of the module serves the calls of one server only (ClassifyInput.Server,
// ShapeInput.Server): a call runs on an idle instance of its server or on
// a fresh one, started from the module compiled once, so no call sees
// what a call for another server left in the guest's memory, globals or
// tables. At most Options.PoolSize calls of one module run at once, and at
// most Options.IdleInstances instances wait idle; an instance that faults is closed.
type Module struct {
	host *Host
	name string
	sum  string
	// bin is the instrumented module until it compiles; src, for the
	// built-in module, the program's own bytes, instrumented again at
	// compile time (Host.load).
	bin []byte
	src []byte
	sh  shape
	// memPages and timeout are the module's limits (LoadOptions).
	memPages uint32
	timeout  time.Duration

	compileMu  sync.Mutex
	compiled   wazero.CompiledModule
	compileErr error // sticky once the module is found bad

	sem chan struct{} // one token per call in flight

	idleMu sync.Mutex
	idle   []*instance // at most Options.IdleInstances, oldest first
}

// Name returns the name the module was loaded under.
func (m *Module) Name() string { return m.name }

// SHA256 returns the hex SHA-256 of the module's bytes.
func (m *Module) SHA256() string { return m.sum }

// CanClassify reports whether the module exports classify.
func (m *Module) CanClassify() bool { return m.sh.classify }

// CanShape reports whether the module exports shape.
func (m *Module) CanShape() bool { return m.sh.shape }

// Compile compiles the module now rather than on its first call, so that
// a module wazero rejects is found early. A module compiles once; a
// module wazero rejects stays rejected.
func (m *Module) Compile(ctx context.Context) error {
	_, err := m.compile(ctx)
	return err
}

// Compiled reports whether the module has been compiled: by
// [Module.Compile] or by its first call.
func (m *Module) Compiled() bool {
	m.compileMu.Lock()
	defer m.compileMu.Unlock()
	return m.compiled != nil
}

// compile compiles the module once and reports whether this call is the
// one that found it bad.
func (m *Module) compile(ctx context.Context) (first bool, _ error) {
	m.compileMu.Lock()
	defer m.compileMu.Unlock()
	if m.compiled != nil || m.compileErr != nil {
		return false, m.compileErr
	}
	bin := m.bin
	if bin == nil {
		var err error
		if bin, err = instrument(m.src, m.memPages); err != nil {
			m.compileErr = fmt.Errorf("compile: %w", err)
			return true, m.compileErr
		}
	}
	cm, err := m.host.rt.CompileModule(ctx, bin)
	if err != nil {
		err = fmt.Errorf("compile: %w", err)
		if ctx.Err() == nil {
			m.compileErr = err
		}
		return true, err
	}
	// The compiled module is all that calls need from now on.
	m.compiled, m.bin, m.src = cm, nil, nil
	return false, nil
}

// Classify runs the module's classify on one tool. The error, if any, is
// a *Fault.
func (m *Module) Classify(ctx context.Context, in ClassifyInput) (Classification, error) {
	if !m.sh.classify {
		return Classification{}, m.fault(FaultUnsupported, nil, "", fmt.Errorf("does not export %s", ExportClassify))
	}
	b, err := json.Marshal(in)
	if err != nil {
		return Classification{}, m.fault(FaultInput, nil, "", fmt.Errorf("encode input: %w", err))
	}
	out, inst, err := m.call(ctx, in.Server, ExportClassify, b, MaxClassifyOutput)
	if err != nil {
		return Classification{}, err
	}
	var c Classification
	if err := json.Unmarshal(out, &c); err != nil {
		return Classification{}, m.discard(inst, FaultMalformed, fmt.Errorf("classify result: %w", err))
	}
	if !validRisk(c.Risk) {
		return Classification{}, m.discard(inst, FaultMalformed, fmt.Errorf("classify result: risk %q is not read, write, destructive or unknown", cut(c.Risk, 64)))
	}
	c.Reason = cleanText(c.Reason, MaxReasonBytes, false)
	if c.Reason == "" {
		return Classification{}, m.discard(inst, FaultMalformed, errors.New("classify result: empty reason"))
	}
	c.Module = m.name
	m.release(inst)
	return c, nil
}

// Shape runs the module's shape on one tool result. The error, if any, is
// a *Fault. Shape does not apply the hard cap; Chain.Shape does.
func (m *Module) Shape(ctx context.Context, in ShapeInput) (Shaped, error) {
	if !m.sh.shape {
		return Shaped{}, m.fault(FaultUnsupported, nil, "", fmt.Errorf("does not export %s", ExportShape))
	}
	if in.Content == nil {
		in.Content = []Content{}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return Shaped{}, m.fault(FaultInput, nil, "", fmt.Errorf("encode input: %w", err))
	}
	if uint64(len(b)) > uint64(m.memPages)*65536/4 {
		return Shaped{}, m.fault(FaultOversized, nil, "", fmt.Errorf("input of %d bytes would not fit a quarter of the memory limit", len(b)))
	}
	out, inst, err := m.call(ctx, in.Server, ExportShape, b, MaxShapeOutput)
	if err != nil {
		return Shaped{}, err
	}
	var s Shaped
	if err := json.Unmarshal(out, &s); err != nil {
		return Shaped{}, m.discard(inst, FaultMalformed, fmt.Errorf("shape result: %w", err))
	}
	if err := checkShaped(in.Content, &s); err != nil {
		return Shaped{}, m.discard(inst, FaultMalformed, fmt.Errorf("shape result: %w", err))
	}
	m.release(inst)
	return s, nil
}

// checkShaped holds a shaper's result to the rules of Shaped.Content and
// cleans its notes.
func checkShaped(in []Content, s *Shaped) error {
	if s.Content == nil {
		return errors.New("no content")
	}
	next := 0 // the next input item a non-text output item may match
	for i, c := range s.Content {
		if c.Type == "" {
			return fmt.Errorf("content[%d] has no type", i)
		}
		if c.Type == "text" {
			if c.MIMEType != "" || c.Size != 0 {
				return fmt.Errorf("content[%d]: a text item carries mime_type or size", i)
			}
			continue
		}
		for next < len(in) && !(in[next].Type != "text" && in[next] == c) {
			next++
		}
		if next == len(in) {
			return fmt.Errorf("content[%d]: %s item is not one of the input's, in order", i, cut(c.Type, 32))
		}
		next++
	}
	const maxNotes = 16
	notes := s.Notes[:0]
	for _, n := range s.Notes {
		if n = cleanText(n, 200, false); n != "" && len(notes) < maxNotes {
			notes = append(notes, n)
		}
	}
	s.Notes = notes
	return nil
}

// instance is one instantiated module with its exports resolved.
type instance struct {
	// server is the server whose calls the instance serves; it never
	// serves another's.
	server           string
	mod              api.Module
	mem              api.Memory
	alloc, free, run api.Function
	fns              map[string]api.Function
	out              *capWriter
}

// call runs one export on one instance: allocate, write the input, call,
// read and copy the output, free both buffers. On success the caller owns
// inst and must release or discard it.
func (m *Module) call(ctx context.Context, server, export string, input []byte, maxOut uint32) (_ []byte, _ *instance, err error) {
	if m.host.isClosed() {
		return nil, nil, m.fault(FaultClosed, nil, "", errors.New("host closed"))
	}
	if first, err := m.compile(ctx); err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, nil, m.fault(FaultCanceled, nil, "", err)
		case !first:
			// Reported when it was found: say it again to the caller only.
			return nil, nil, &Fault{Module: m.name, Kind: FaultUnavailable, Err: err}
		}
		return nil, nil, m.fault(FaultUnavailable, nil, "", err)
	}
	select {
	case m.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, m.fault(FaultCanceled, nil, "", ctx.Err())
	}
	// An instance serves one server's calls only, so nothing a call
	// leaves in memory or globals (a server's output, say) reaches
	// another server's answer.
	inst := m.takeIdle(server)
	if inst == nil {
		inst, err = m.instantiate(ctx)
		if err != nil {
			<-m.sem
			return nil, nil, err
		}
		inst.server = server
	}
	inst.out.reset()
	cctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()

	fail := func(kind FaultKind, err error) ([]byte, *instance, error) {
		if kind == "" {
			kind = m.kindOf(ctx, inst, err)
		}
		if kind == FaultDeadline && ctx.Err() == nil {
			// The module's own timeout ended the call, not the caller.
			err = fmt.Errorf("%w (past the module's timeout of %s)", err, m.timeout)
		}
		return nil, nil, m.discard(inst, kind, err)
	}
	res, err := inst.alloc.Call(cctx, uint64(len(input)))
	if err != nil {
		return fail("", fmt.Errorf("%s: %w", ExportAlloc, err))
	}
	inPtr := uint32(res[0])
	if inPtr == 0 {
		return fail(FaultMemory, fmt.Errorf("%s(%d) returned 0", ExportAlloc, len(input)))
	}
	if !inst.mem.Write(inPtr, input) {
		return fail(FaultMalformed, fmt.Errorf("%s returned a buffer outside memory", ExportAlloc))
	}
	res, err = inst.fns[export].Call(cctx, uint64(inPtr), uint64(len(input)))
	if err != nil {
		return fail("", fmt.Errorf("%s: %w", export, err))
	}
	outPtr, outLen := uint32(res[0]>>32), uint32(res[0])
	if outLen > maxOut {
		return fail(FaultOversized, fmt.Errorf("%s returned %d bytes, over the limit of %d", export, outLen, maxOut))
	}
	view, ok := inst.mem.Read(outPtr, outLen)
	if !ok {
		return fail(FaultMalformed, fmt.Errorf("%s returned a result outside memory (ptr %d, len %d)", export, outPtr, outLen))
	}
	out := make([]byte, len(view))
	copy(out, view)
	if _, err := inst.free.Call(cctx, uint64(inPtr), uint64(len(input))); err != nil {
		return fail("", fmt.Errorf("%s: %w", ExportFree, err))
	}
	if outLen > 0 {
		if _, err := inst.free.Call(cctx, uint64(outPtr), uint64(outLen)); err != nil {
			return fail("", fmt.Errorf("%s: %w", ExportFree, err))
		}
	}
	return out, inst, nil
}

// instantiate starts a new instance. The caller holds a pool token.
func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	w := &capWriter{max: stderrCap}
	cfg := wazero.NewModuleConfig().
		WithName(""). // anonymous, so one runtime holds many instances
		WithStartFunctions(ExportInitialize).
		WithStdout(w).
		WithStderr(w)
	ictx, cancel := context.WithTimeout(ctx, max(instantiateTimeout, m.timeout))
	defer cancel()
	mod, err := m.host.rt.InstantiateModule(ictx, m.compiled, cfg)
	if err != nil {
		kind := FaultUnavailable
		switch {
		case ctx.Err() != nil:
			kind = FaultCanceled
		case ictx.Err() != nil:
			kind = FaultDeadline
		}
		return nil, m.fault(kind, nil, w.String(), fmt.Errorf("instantiate: %w", err))
	}
	inst := &instance{mod: mod, mem: mod.Memory(), out: w,
		alloc: mod.ExportedFunction(ExportAlloc), free: mod.ExportedFunction(ExportFree),
		fns: map[string]api.Function{}}
	for _, name := range []string{ExportClassify, ExportShape} {
		if f := mod.ExportedFunction(name); f != nil {
			inst.fns[name] = f
		}
	}
	return inst, nil
}

// kindOf names the fault a call error stands for.
func (m *Module) kindOf(ctx context.Context, inst *instance, err error) FaultKind {
	switch {
	case ctx.Err() == context.Canceled:
		return FaultCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return FaultDeadline
	case errors.Is(err, context.Canceled):
		return FaultCanceled
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return FaultTrap
	}
	// A guest that runs out of memory traps: a wasm guest sees memory.grow
	// fail, and a Go guest's runtime then aborts with "out of memory" on
	// stderr. Call that a memory fault when the memory is near the limit.
	// The slack is the last eighth of the limit, at most 64 pages.
	slack := min(m.memPages/8, 64)
	if strings.Contains(inst.out.String(), "out of memory") ||
		inst.mem != nil && inst.mem.Size()/65536+slack >= m.memPages {
		return FaultMemory
	}
	return FaultTrap
}

// takeIdle returns an idle instance that serves server, or nil.
func (m *Module) takeIdle(server string) *instance {
	m.idleMu.Lock()
	defer m.idleMu.Unlock()
	for i := len(m.idle) - 1; i >= 0; i-- {
		if inst := m.idle[i]; inst.server == server {
			m.idle = slices.Delete(m.idle, i, i+1)
			return inst
		}
	}
	return nil
}

// release keeps the instance of a call that succeeded for its server's
// next call, closing the longest idle instance when Options.IdleInstances
// are idle already, and frees the call's pool token.
func (m *Module) release(inst *instance) {
	m.idleMu.Lock()
	var evict *instance
	if len(m.idle) >= m.host.idleMax {
		evict = m.idle[0]
		m.idle = slices.Delete(m.idle, 0, 1)
	}
	m.idle = append(m.idle, inst)
	m.idleMu.Unlock()
	if evict != nil {
		_ = evict.mod.Close(context.Background())
	}
	<-m.sem
}

// discard closes an instance that faulted, frees its pool token and
// reports the fault.
func (m *Module) discard(inst *instance, kind FaultKind, err error) *Fault {
	out := inst.out.String()
	_ = inst.mod.Close(context.Background())
	<-m.sem
	return m.fault(kind, inst, out, err)
}

// fault builds a Fault and reports it when its kind is reported.
func (m *Module) fault(kind FaultKind, _ *instance, output string, err error) *Fault {
	f := &Fault{Module: m.name, Kind: kind, Err: err, Output: output}
	if kind.reported() && m.host.onFault != nil {
		m.host.onFault(*f)
	}
	return f
}

// capWriter keeps the first max bytes written to it.
type capWriter struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - len(w.b); room > 0 {
		w.b = append(w.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *capWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return cleanText(string(w.b), w.max, true)
}

func (w *capWriter) reset() {
	w.mu.Lock()
	w.b = w.b[:0]
	w.mu.Unlock()
}
