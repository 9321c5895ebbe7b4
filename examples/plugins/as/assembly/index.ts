// A voltmcp risk classifier in AssemblyScript, for plugin ABI version 1
// (docs/plugins.md). House rules: every tool of a server whose ID starts
// with "prod" is destructive; a tool whose name ends in "_dry_run" is read.
// Everything else is unknown, which hands the tool to the next classifier
// in the chain (the built-in one, by default).

// The ABI version marker: never called, its name is the version.
export function voltmcp_abi_v1(): void {}

// The allocator the host fills inputs through.
export function voltmcp_alloc(size: u32): usize {
  return heap.alloc(size);
}

// Frees an input buffer or a result.
export function voltmcp_free(ptr: usize, size: u32): void {
  heap.free(ptr);
}

// classify reads a ClassifyInput and returns a packed pointer and length
// of a Classification.
export function classify(ptr: usize, len: u32): u64 {
  const input = String.UTF8.decodeUnsafe(ptr, len);
  const server = field(input, "server");
  const tool = field(input, "tool");
  let out = '{"risk":"unknown","reason":"no house rule matches"}';
  if (server.startsWith("prod")) {
    out = '{"risk":"destructive","reason":"house rule: every tool of a production server"}';
  } else if (tool.endsWith("_dry_run")) {
    out = '{"risk":"read","reason":"house rule: dry runs change nothing"}';
  }
  return result(out);
}

// result copies s into a buffer the host frees with voltmcp_free.
function result(s: string): u64 {
  const n = String.UTF8.byteLength(s);
  const p = heap.alloc(n);
  String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, p);
  return (<u64>p << 32) | <u64>n;
}

// field returns the string value of a top-level member of a JSON object,
// or "" when it is absent or not a string. It skips nested values and
// decodes the common escapes; \u escapes are kept as written, which is
// enough for comparisons against ASCII rules.
function field(json: string, key: string): string {
  let depth = 0;
  let i = 0;
  const n = json.length;
  while (i < n) {
    const c = json.charCodeAt(i);
    if (c == 0x22) { // '"'
      const end = stringEnd(json, i);
      if (depth == 1) {
        const name = json.substring(i + 1, end);
        let j = end + 1;
        while (j < n && isSpace(json.charCodeAt(j))) j++;
        if (j < n && json.charCodeAt(j) == 0x3a) { // ':' so this was a key
          j++;
          while (j < n && isSpace(json.charCodeAt(j))) j++;
          if (name == key) {
            if (j < n && json.charCodeAt(j) == 0x22) return unescape(json.substring(j + 1, stringEnd(json, j)));
            return "";
          }
        }
      }
      i = end + 1;
      continue;
    }
    if (c == 0x7b || c == 0x5b) depth++;
    if (c == 0x7d || c == 0x5d) depth--;
    i++;
  }
  return "";
}

// stringEnd returns the index of the quote closing the string at start.
function stringEnd(json: string, start: i32): i32 {
  let i = start + 1;
  while (i < json.length) {
    const c = json.charCodeAt(i);
    if (c == 0x5c) { i += 2; continue; }
    if (c == 0x22) return i;
    i++;
  }
  return json.length;
}

function unescape(s: string): string {
  if (s.indexOf("\\") < 0) return s;
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charAt(i);
    if (c == "\\" && i + 1 < s.length) {
      i++;
      const e = s.charAt(i);
      if (e == "n") out += "\n";
      else if (e == "t") out += "\t";
      else if (e == "u") out += "\\u";
      else out += e;
    } else {
      out += c;
    }
  }
  return out;
}

function isSpace(c: i32): bool {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d;
}
