#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
'use strict';
// compare.js FXTCHECK FILE...
//
// Loads each FXT file into Perfetto's trace processor (trace_processor.js) and compares
// what Perfetto imported with what the project's own reader lists (`FXTCHECK FILE
// --events`): processes and their names; threads, their names and processes; every
// slice (thread, depth, begin, end, name) and its arguments; every instant (thread,
// time, name) and its arguments; and Perfetto's import errors (`stats` rows of severity
// error or data_loss). Integers compare as 64-bit patterns, doubles as numbers.
// Perfetto UI v20.1 keeps at most 255 nested slices per thread: deeper slices are not
// compared, and said so. Instants are in its `instants` table.
//
// Prints one line per file and the differences; exit 0 when every file agrees, 1 when
// one does not, 2 when a file cannot be read or Perfetto cannot be run.
const { execFileSync } = require('child_process');
const fs = require('fs');
const { TraceProcessor } = require('./trace_processor.js');

const V20_MAX_DEPTH = 255;

const unescape = (s) => s.replace(/\\(.)/g, (_, c) => ({ n: '\n', r: '\r', t: '\t' }[c] || c));
const escape = (s) => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r')
  .replace(/\t/g, '\\t');

// An argument value in one spelling for both sides.
function canonical(v) {
  if (typeof v === 'bigint') return BigInt.asUintN(64, v).toString();
  if (typeof v === 'number') {
    return Number.isInteger(v) && Math.abs(v) <= Number.MAX_SAFE_INTEGER ?
      BigInt.asUintN(64, BigInt(v)).toString() : String(v);
  }
  if (/^-?[0-9]+$/.test(v)) return BigInt.asUintN(64, BigInt(v)).toString();
  if (/^-?[0-9.]+(e[-+]?[0-9]+)?$/i.test(v) || /^-?(inf|nan)$/i.test(v)) return String(Number(v));
  return v;
}

// fxtcheck --events: {processes, threads, slices, instants}; args as "k=v" lists.
function ourView(fxtcheck, file) {
  let out;
  try {
    out = execFileSync(fxtcheck, ['--events', file], { maxBuffer: 1 << 30, encoding: 'utf8' });
  } catch (e) {
    throw new Error(`${fxtcheck} --events ${file}: ${e.stderr || e.message}`.trim());
  }
  const view = { processes: [], threads: [], slices: [], instants: [] };
  let last = null;
  for (const line of out.split('\n')) {
    if (!line) continue;
    const f = line.split('\t');
    if (f[0] === 'process') view.processes.push({ pid: f[1], name: unescape(f[2]) });
    else if (f[0] === 'thread') view.threads.push({ pid: f[1], tid: f[2], name: unescape(f[3]) });
    else if (f[0] === 'slice') {
      last = { pid: f[1], tid: f[2], depth: Number(f[3]), begin: f[4], end: f[5],
        name: unescape(f[6]), args: [] };
      view.slices.push(last);
    } else if (f[0] === 'instant') {
      last = { pid: f[1], tid: f[2], ts: f[3], name: unescape(f[4]), args: [] };
      view.instants.push(last);
    } else if (f[0] === 'arg' && last) {
      last.args.push(`${unescape(f[1])}=${canonical(unescape(f[2]))}`);
    } else {
      throw new Error(`${fxtcheck} --events: unexpected line ${JSON.stringify(line)}`);
    }
  }
  return view;
}

function perfettoView(tp) {
  const args = new Map();
  for (const a of tp.query('SELECT arg_set_id, key, int_value, string_value, real_value, ' +
    'value_type FROM args')) {
    let v = a.int_value !== null ? a.int_value : a.real_value !== null ? a.real_value :
      a.string_value;
    v = v === null ? 'null' : a.string_value !== null ? a.string_value : v;
    if (!args.has(a.arg_set_id)) args.set(a.arg_set_id, []);
    args.get(a.arg_set_id).push(`${a.key}=${canonical(v)}`);
  }
  const argsOf = (id) => (id === null ? [] : args.get(id) || []);
  const view = {
    processes: tp.query('SELECT pid, name FROM process WHERE upid != 0'),
    threads: tp.query('SELECT t.tid, t.name, p.pid FROM thread t ' +
      'LEFT JOIN process p USING (upid) WHERE t.utid != 0'),
    slices: tp.query('SELECT s.ts, s.dur, s.depth, s.name, s.arg_set_id, t.tid, p.pid ' +
      'FROM slice s JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) ' +
      'LEFT JOIN process p USING (upid)').map((s) => ({
      pid: String(s.pid), tid: String(s.tid), depth: s.depth, begin: String(s.ts),
      end: s.dur < 0 ? '-' : String(s.ts + s.dur), name: s.name, args: argsOf(s.arg_set_id),
    })),
    otherSlices: tp.query('SELECT count(*) AS n FROM slice WHERE track_id NOT IN ' +
      '(SELECT id FROM thread_track)')[0].n,
    instants: tp.query("SELECT i.ts, i.name, i.arg_set_id, t.tid, p.pid FROM instants i " +
      "JOIN thread t ON i.ref = t.utid AND i.ref_type = 'utid' " +
      'LEFT JOIN process p USING (upid)').map((i) => ({
      pid: String(i.pid), tid: String(i.tid), ts: String(i.ts), name: i.name,
      args: argsOf(i.arg_set_id),
    })),
    otherInstants: tp.query("SELECT count(*) AS n FROM instants WHERE ref_type != 'utid'")[0].n,
    errors: tp.query("SELECT name, idx, severity, value FROM stats WHERE value > 0 AND " +
      "severity IN ('error', 'data_loss')"),
  };
  return view;
}

// Lines only one side has (as multisets), at most `max` of each.
function diff(what, ours, theirs, key, problems, max = 5) {
  const count = new Map();
  for (const x of ours) { const k = key(x); count.set(k, (count.get(k) || 0) + 1); }
  for (const x of theirs) { const k = key(x); count.set(k, (count.get(k) || 0) - 1); }
  const onlyOurs = [];
  const onlyTheirs = [];
  for (const [k, n] of count) {
    for (let i = 0; i < n; i++) onlyOurs.push(k);
    for (let i = 0; i < -n; i++) onlyTheirs.push(k);
  }
  if (!onlyOurs.length && !onlyTheirs.length) return;
  problems.push(`${what}: ${onlyOurs.length} only in fxtcheck's view, ` +
    `${onlyTheirs.length} only in Perfetto's`);
  for (const k of onlyOurs.sort().slice(0, max)) problems.push(`  fxtcheck: ${escape(k)}`);
  for (const k of onlyTheirs.sort().slice(0, max)) problems.push(`  perfetto: ${escape(k)}`);
}

function compare(ours, theirs) {
  const problems = [];
  const notes = [];
  for (const e of theirs.errors) {
    problems.push(`Perfetto import error: ${e.name}${e.idx !== null ? `[${e.idx}]` : ''} = ` +
      `${e.value} (${e.severity})`);
  }
  diff('processes', ours.processes, theirs.processes, (p) => `${p.pid} ${p.name}`, problems);
  diff('threads', ours.threads, theirs.threads, (t) => `${t.pid}/${t.tid} ${t.name}`, problems);
  const deep = ours.slices.filter((s) => s.depth >= V20_MAX_DEPTH);
  if (deep.length) {
    notes.push(`${deep.length} slices at depth >= ${V20_MAX_DEPTH} (Perfetto v20.1's limit) ` +
      'not compared');
  }
  const slice = (s) => `${s.pid}/${s.tid} ${s.depth} ${s.begin} ${s.end} ${s.name}`;
  diff('slices', ours.slices.filter((s) => s.depth < V20_MAX_DEPTH), theirs.slices, slice,
    problems);
  if (theirs.otherSlices) problems.push(`${theirs.otherSlices} slices on tracks of no thread`);
  diff('slice arguments', ours.slices.filter((s) => s.depth < V20_MAX_DEPTH), theirs.slices,
    (s) => `${slice(s)} {${s.args.sort().join(', ')}}`, problems);
  const instant = (i) => `${i.pid}/${i.tid} ${i.ts} ${i.name}`;
  diff('instants', ours.instants, theirs.instants, instant, problems);
  if (theirs.otherInstants) problems.push(`${theirs.otherInstants} instants not on a thread`);
  diff('instant arguments', ours.instants, theirs.instants,
    (i) => `${instant(i)} {${i.args.sort().join(', ')}}`, problems);
  return { problems, notes };
}

async function main() {
  const [fxtcheck, ...files] = process.argv.slice(2);
  if (!fxtcheck || !files.length) {
    console.error('usage: compare.js FXTCHECK FILE...');
    return 2;
  }
  let rc = 0;
  for (const file of files) {
    const started = Date.now();
    const ours = ourView(fxtcheck, file);
    const tp = await TraceProcessor.load(fs.readFileSync(file));
    const theirs = perfettoView(tp);
    const { problems, notes } = compare(ours, theirs);
    const args = ours.slices.reduce((n, s) => n + s.args.length, 0) +
      ours.instants.reduce((n, i) => n + i.args.length, 0);
    console.log(`${problems.length ? 'DIFFERS' : 'same'}: ${file}: ${ours.processes.length} ` +
      `processes, ${ours.threads.length} threads, ${theirs.slices.length} slices, ` +
      `${theirs.instants.length} instants, ${args} arguments ` +
      `(${((Date.now() - started) / 1000).toFixed(1)} s)`);
    for (const n of notes) console.log(`  note: ${n}`);
    for (const p of problems) console.log(`  ${p}`);
    if (problems.length) rc = 1;
  }
  return rc;
}

main().then((rc) => process.exit(rc), (e) => {
  console.error(`compare.js: ${e.message}`);
  process.exit(2);
});
