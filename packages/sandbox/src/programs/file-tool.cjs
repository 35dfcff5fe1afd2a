// The sandbox's file tools, run by Node as the student (`node -e`, see ../file-tools.ts).
// Request on stdin (JSON), one JSON response on stdout.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const C = fs.constants;
const out = (v) => process.stdout.write(JSON.stringify(v));
const fail = (code, message) => {
  out({ ok: false, code, message });
  process.exit(0);
};
function openRegular(p, flags) {
  let fd;
  try {
    fd = fs.openSync(p, flags | C.O_NONBLOCK | C.O_NOCTTY, 0o644);
  } catch (e) {
    fail(e.code || 'EIO', e.message);
  }
  const st = fs.fstatSync(fd);
  if (!st.isFile()) {
    fs.closeSync(fd);
    fail('NOT_REGULAR_FILE', p + ' is not a regular file');
  }
  return { fd, st };
}
function readCapped(fd, cap) {
  const parts = [];
  let total = 0;
  const buf = Buffer.alloc(64 * 1024);
  for (;;) {
    const n = fs.readSync(fd, buf, 0, buf.length, null);
    if (n === 0) break;
    total += n;
    if (total > cap) return null;
    parts.push(Buffer.from(buf.subarray(0, n)));
  }
  return Buffer.concat(parts);
}
const decoder = new TextDecoder('utf-8', { fatal: true });
function text(bytes, p) {
  try {
    return decoder.decode(bytes);
  } catch {
    fail('NOT_TEXT', p + ' is not UTF-8 text');
  }
}
let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  input += d;
});
process.stdin.on('end', () => {
  // The harness's own request (JSON.stringify of a parsed options object), not the student's.
  // eslint-disable-next-line no-restricted-syntax
  const r = JSON.parse(input);
  if (r.op === 'view') {
    const { fd, st } = openRegular(r.path, C.O_RDONLY);
    const buf = Buffer.alloc(64 * 1024);
    let line = 1,
      kept = [],
      keptBytes = 0,
      cur = [],
      curBytes = 0,
      truncated = false,
      scanned = 0,
      lastLine = r.startLine - 1,
      early = false,
      trailing = false;
    const inRange = () => line >= r.startLine && line <= r.endLine;
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      scanned += n;
      let start = 0;
      for (let i = 0; i <= n; i++) {
        const newline = i < n && buf[i] === 10;
        if (!newline && i < n) continue;
        const end = newline ? i + 1 : n;
        if (end > start) {
          trailing = !newline;
          if (inRange() && !truncated) {
            if (keptBytes + curBytes + (end - start) > r.maxBytes) truncated = true;
            else {
              cur.push(Buffer.from(buf.subarray(start, end)));
              curBytes += end - start;
            }
          }
        }
        if (newline) {
          if (inRange() && !truncated) {
            kept.push(...cur);
            keptBytes += curBytes;
            lastLine = line;
          }
          cur = [];
          curBytes = 0;
          line++;
          trailing = false;
        }
        start = i + 1;
      }
      if (line > r.endLine && scanned >= r.scanBytes) {
        early = true;
        break;
      }
    }
    if (trailing && inRange() && !truncated) {
      kept.push(...cur);
      lastLine = line;
    }
    const totalLines = early ? null : trailing ? line : line - 1;
    out({
      ok: true,
      op: 'view',
      content: text(Buffer.concat(kept), r.path),
      startLine: r.startLine,
      endLine: lastLine,
      totalLines,
      truncated,
      fileBytes: st.size,
    });
  } else if (r.op === 'write') {
    if (r.createParents) {
      try {
        fs.mkdirSync(path.dirname(r.path), { recursive: true });
      } catch (e) {
        fail(e.code || 'EIO', e.message);
      }
    }
    const { fd } = openRegular(r.path, C.O_WRONLY | C.O_CREAT);
    try {
      fs.ftruncateSync(fd, 0);
      const data = Buffer.from(r.content, 'utf8');
      let off = 0;
      while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off);
      fs.closeSync(fd);
      out({ ok: true, op: 'write', bytes: data.length });
    } catch (e) {
      fail(e.code || 'EIO', e.message);
    }
  } else if (r.op === 'replace') {
    const { fd } = openRegular(r.path, C.O_RDWR);
    const bytes = readCapped(fd, r.maxFileBytes);
    if (bytes === null) fail('FILE_TOO_LARGE', r.path + ' is larger than ' + r.maxFileBytes + ' bytes');
    const body = text(bytes, r.path);
    let count = 0,
      at = -1;
    while ((at = body.indexOf(r.oldText, at + 1)) >= 0) {
      count++;
      if (r.oldText.length === 0) break;
    }
    if (r.oldText.length === 0) fail('INVALID', 'oldText is empty');
    if (count === 0) fail('NOT_FOUND', 'oldText was not found in ' + r.path);
    if (count > 1 && !r.replaceAll)
      fail(
        'AMBIGUOUS',
        'oldText occurs ' + count + ' times in ' + r.path + '; give more context or set replaceAll',
      );
    const next = r.replaceAll
      ? body.split(r.oldText).join(r.newText)
      : body.replace(r.oldText, () => r.newText);
    const data = Buffer.from(next, 'utf8');
    if (data.length > r.maxFileBytes)
      fail('FILE_TOO_LARGE', 'the result would be larger than ' + r.maxFileBytes + ' bytes');
    try {
      fs.ftruncateSync(fd, 0);
      let off = 0;
      while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off, off);
      fs.closeSync(fd);
    } catch (e) {
      fail(e.code || 'EIO', e.message);
    }
    out({ ok: true, op: 'replace', replacements: r.replaceAll ? count : 1, bytes: data.length });
  } else if (r.op === 'list') {
    let dir;
    try {
      dir = fs.opendirSync(r.path);
    } catch (e) {
      fail(e.code || 'EIO', e.message);
    }
    const entries = [];
    let truncated = false;
    let d;
    while ((d = dir.readSync()) !== null) {
      if (entries.length >= r.maxEntries) {
        truncated = true;
        break;
      }
      let size = null;
      let type = 'other';
      try {
        const st = fs.lstatSync(path.join(r.path, d.name));
        size = st.size;
        type = st.isFile()
          ? 'file'
          : st.isDirectory()
            ? 'directory'
            : st.isSymbolicLink()
              ? 'symlink'
              : 'other';
      } catch {
        /* gone or unreadable: listed with size null, type other */
      }
      entries.push({ name: d.name, type, size });
    }
    dir.closeSync();
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    out({ ok: true, op: 'list', entries, truncated });
  } else fail('INVALID', 'unknown op');
});
