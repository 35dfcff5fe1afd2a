// The sandbox's file tools, run by Node as the student (`node -e`, see ../file-tools.ts).
// Request on stdin (JSON), one JSON response on stdout. Every open happens here, with the
// student's uid in the student's mount namespace: a planted link reaches only what the
// student could reach itself. Opens are O_NONBLOCK|O_NOCTTY (a FIFO, a lease or a tty never
// blocks), the opened descriptor must be a regular file (fstat after open, so a swap between
// a check and the open cannot matter), and every read is bounded.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const C = fs.constants;
const out = (v) => process.stdout.write(JSON.stringify(v));
const fail = (code, message) => {
  out({ ok: false, code, message });
  process.exit(0);
};
const errnoFail = (e) => fail((e && e.code) || 'EIO', (e && e.message) || String(e));
function openRegular(p, flags) {
  let fd;
  try {
    fd = fs.openSync(p, flags | C.O_NONBLOCK | C.O_NOCTTY, 0o644);
  } catch (e) {
    errnoFail(e);
  }
  const st = fs.fstatSync(fd);
  if (!st.isFile()) {
    fs.closeSync(fd);
    if (st.isDirectory()) fail('EISDIR', p + ' is a directory');
    fail('NOT_REGULAR_FILE', p + ' is not a regular file');
  }
  return { fd, st };
}
/** All bytes up to `cap`, or null when the file has more (whatever its size claims). */
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
const sha256 = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex');
const decoder = new TextDecoder('utf-8', { fatal: true });
/** Text is valid UTF-8 without NUL bytes (a NUL means a binary file, a sparse file's holes). */
function text(bytes, p) {
  if (bytes.indexOf(0) !== -1) fail('NOT_TEXT', p + ' is not a text file (it holds NUL bytes)');
  try {
    return decoder.decode(bytes);
  } catch {
    fail('NOT_TEXT', p + ' is not UTF-8 text');
  }
}
/** Drop an incomplete UTF-8 sequence at the end (a cut made inside a character). */
function cutAtCharacter(bytes) {
  for (let back = 1; back <= 4 && back <= bytes.length; back++) {
    const b = bytes[bytes.length - back];
    if ((b & 0xc0) === 0x80) continue;
    const need = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? bytes.subarray(0, bytes.length - back) : bytes;
  }
  return bytes;
}
function writeAll(fd, data) {
  let off = 0;
  while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off, off);
}

function view(r) {
  const { fd, st } = openRegular(r.path, C.O_RDONLY);
  const buf = Buffer.alloc(256 * 1024);
  const kept = [];
  let keptBytes = 0,
    cur = [],
    curBytes = 0,
    line = 1,
    lastLine = r.startLine - 1,
    truncated = false,
    scanned = 0,
    early = false,
    trailing = false;
  const inRange = () => line >= r.startLine && line <= r.endLine;
  for (;;) {
    const n = fs.readSync(fd, buf, 0, buf.length, null);
    if (n === 0) break;
    scanned += n;
    const chunk = buf.subarray(0, n);
    let start = 0;
    while (start < n) {
      const at = chunk.indexOf(10, start);
      const end = at === -1 ? n : at + 1;
      if (inRange() && !truncated) {
        if (keptBytes + curBytes + (end - start) > r.maxBytes) {
          truncated = true;
          // The head of the line that does not fit, when asked (a giant single line still shows).
          const room = r.maxBytes - keptBytes - curBytes;
          if (r.partialLine && curBytes + room > 0) {
            cur.push(Buffer.from(chunk.subarray(start, start + room)));
            kept.push(...cur);
            keptBytes += curBytes + room;
            lastLine = line;
          }
        } else {
          cur.push(Buffer.from(chunk.subarray(start, end)));
          curBytes += end - start;
        }
      }
      trailing = at === -1;
      if (at !== -1) {
        if (inRange() && !truncated) {
          kept.push(...cur);
          keptBytes += curBytes;
          lastLine = line;
        }
        cur = [];
        curBytes = 0;
        line++;
      }
      start = end;
    }
    // Nothing more can be kept once truncated; past the range only lines are counted, and no
    // more than scanBytes are ever read (a sparse giant is not read to its end).
    if (truncated || scanned >= r.scanBytes) {
      early = true;
      break;
    }
  }
  if (!early && trailing && inRange() && !truncated) {
    kept.push(...cur);
    lastLine = line;
  }
  // Stopped by scanBytes inside the range: what is shown is not all of it.
  if (early && !truncated && lastLine >= r.startLine && line <= r.endLine) truncated = true;
  let bytes = Buffer.concat(kept);
  if (truncated && r.partialLine) bytes = cutAtCharacter(bytes);
  out({
    ok: true,
    op: 'view',
    content: text(bytes, r.path),
    startLine: r.startLine,
    endLine: lastLine,
    totalLines: early ? null : trailing ? line : line - 1,
    truncated,
    fileBytes: st.size,
  });
}

function read(r) {
  const { fd, st } = openRegular(r.path, C.O_RDONLY);
  // The size gate answers an honest giant at once; the capped read holds even when the size lies.
  if (st.size > r.maxBytes)
    fail('FILE_TOO_LARGE', r.path + ' is ' + st.size + ' bytes; the limit is ' + r.maxBytes + ' bytes');
  const bytes = readCapped(fd, r.maxBytes);
  fs.closeSync(fd);
  if (bytes === null) fail('FILE_TOO_LARGE', r.path + ' is larger than ' + r.maxBytes + ' bytes (read cap)');
  const base = { ok: true, op: 'read', fileBytes: bytes.length, sha256: sha256(bytes) };
  if (r.encoding === 'utf8') out({ ...base, content: text(bytes, r.path) });
  else out({ ...base, dataBase64: bytes.toString('base64') });
}

function write(r) {
  if (r.createParents) {
    try {
      fs.mkdirSync(path.dirname(r.path), { recursive: true });
    } catch (e) {
      errnoFail(e);
    }
  }
  // createOnly: O_EXCL fails on anything at the path, a dangling link included. expectedSha256:
  // the file must exist and still hold what the caller read (an edit computed from a read).
  const flags =
    r.expectedSha256 !== undefined ? C.O_RDWR : C.O_WRONLY | C.O_CREAT | (r.createOnly ? C.O_EXCL : 0);
  const { fd } = openRegular(r.path, flags);
  try {
    if (r.expectedSha256 !== undefined) {
      const now = readCapped(fd, r.compareBytes);
      if (now === null || sha256(now) !== r.expectedSha256)
        fail('CONFLICT', r.path + ' changed since it was read; nothing was written');
    }
    fs.ftruncateSync(fd, 0);
    const data = Buffer.from(r.content, 'utf8');
    writeAll(fd, data);
    fs.closeSync(fd);
    out({ ok: true, op: 'write', bytes: data.length });
  } catch (e) {
    errnoFail(e);
  }
}

function replace(r) {
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
    writeAll(fd, data);
    fs.closeSync(fd);
  } catch (e) {
    errnoFail(e);
  }
  out({ ok: true, op: 'replace', replacements: r.replaceAll ? count : 1, bytes: data.length });
}

function remove(r) {
  // lstat: a link is removed itself, never what it points at.
  let st;
  try {
    st = fs.lstatSync(r.path);
  } catch (e) {
    errnoFail(e);
  }
  if (st.isDirectory()) fail('EISDIR', r.path + ' is a directory; only files are deleted');
  try {
    fs.unlinkSync(r.path);
  } catch (e) {
    errnoFail(e);
  }
  out({ ok: true, op: 'delete' });
}

function list(r) {
  const entries = [];
  let truncated = false;
  let visits = 0;
  // Depth-first below r.path; links are listed, never followed; hidden names skipped on request.
  const pending = [{ rel: '', depth: 1 }];
  while (pending.length > 0 && !truncated) {
    const { rel, depth } = pending.pop();
    let dir;
    try {
      dir = fs.opendirSync(rel === '' ? r.path : path.join(r.path, rel));
    } catch (e) {
      if (rel === '') errnoFail(e);
      continue;
    }
    let d;
    while ((d = dir.readSync()) !== null) {
      if (++visits > r.maxEntries * 4) {
        truncated = true;
        break;
      }
      if (!r.includeHidden && d.name.startsWith('.')) continue;
      if (entries.length >= r.maxEntries) {
        truncated = true;
        break;
      }
      const name = rel === '' ? d.name : rel + '/' + d.name;
      let size = null;
      let type = 'other';
      try {
        const st = fs.lstatSync(path.join(r.path, name));
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
      entries.push({ name, type, size });
      if (type === 'directory' && depth < r.depth) pending.push({ rel: name, depth: depth + 1 });
    }
    dir.closeSync();
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  out({ ok: true, op: 'list', entries, truncated });
}

const OPS = { view, read, write, replace, delete: remove, list };
let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  input += d;
});
process.stdin.on('end', () => {
  // The harness's own request (JSON.stringify of a parsed options object), not the student's.
  // eslint-disable-next-line no-restricted-syntax
  const r = JSON.parse(input);
  const op = Object.prototype.hasOwnProperty.call(OPS, r.op) ? OPS[r.op] : undefined;
  if (op === undefined) fail('INVALID', 'unknown op');
  op(r);
});
