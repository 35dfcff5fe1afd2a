// The as-uid helper, run by Node as the target uid (`node -e`, see ../helper-source.ts).
// Request: argv[1] ('karotte-request:' + base64 JSON), payload on stdin. Output on fd 1,
// one JSON status object on fd 3.
'use strict';
const fs = require('node:fs');
const C = fs.constants;
const O_PATH = 0o10000000;
const CHUNK = 1024 * 1024;

function send(value) {
  const ids = { uid: process.getuid(), gid: process.getgid(), groups: process.getgroups() };
  const bytes = Buffer.from(JSON.stringify(Object.assign({ ids: ids }, value)));
  writeAll(3, bytes);
}
function writeAll(fd, bytes) {
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += fs.writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      if (error.code !== 'EAGAIN') throw error;
    }
  }
}
class Refused extends Error {
  constructor(reason, message, extra) {
    super(message);
    this.reason = reason;
    this.extra = extra || {};
  }
}
const REASONS = {
  ENOENT: 'NOT_FOUND',
  EACCES: 'PERMISSION_DENIED',
  EPERM: 'PERMISSION_DENIED',
  ELOOP: 'SYMLINK',
  ENOTDIR: 'NOT_DIRECTORY',
  EISDIR: 'IS_DIRECTORY',
  ENXIO: 'NOT_REGULAR_FILE',
  ENODEV: 'NOT_REGULAR_FILE',
  EEXIST: 'EXISTS',
  ENOSPC: 'NO_SPACE',
  EDQUOT: 'NO_SPACE',
  EROFS: 'READ_ONLY',
  ENAMETOOLONG: 'NAME_TOO_LONG',
  EFBIG: 'TOO_LARGE',
  EAGAIN: 'BUSY',
  EWOULDBLOCK: 'BUSY',
  ETXTBSY: 'BUSY',
};
function reasonOf(error) {
  return (error && REASONS[error.code]) || 'IO_ERROR';
}
function split(bytes) {
  const out = [];
  let start = 0;
  for (let i = 0; i <= bytes.length; i++) {
    if (i === bytes.length || bytes[i] === 0x2f) {
      if (i > start) out.push(bytes.subarray(start, i));
      start = i + 1;
    }
  }
  return out;
}
function at(fd, name) {
  return name === undefined
    ? Buffer.from('/proc/self/fd/' + fd)
    : Buffer.concat([Buffer.from('/proc/self/fd/' + fd + '/'), name]);
}
function typeOf(st) {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'directory';
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isFIFO()) return 'fifo';
  if (st.isSocket()) return 'socket';
  if (st.isCharacterDevice()) return 'char-device';
  if (st.isBlockDevice()) return 'block-device';
  return 'unknown';
}
function describe(st) {
  return st.isDirectory() ? 'is a directory' : 'is not a regular file (' + typeOf(st) + ')';
}
// Classify the final component through an O_PATH descriptor: { fd, st } or throws Refused.
// Returns null when it does not exist and allowMissing.
function classify(path, follow, allowMissing, allowLink) {
  const parts = split(path);
  if (parts.length === 0) {
    const fd = fs.openSync('/', O_PATH | C.O_DIRECTORY);
    return { fd: fd, st: fs.fstatSync(fd) };
  }
  if (follow) {
    let fd;
    try {
      fd = fs.openSync(path, O_PATH);
    } catch (error) {
      if (allowMissing && error.code === 'ENOENT') return null;
      throw new Refused(reasonOf(error), error.code);
    }
    return { fd: fd, st: fs.fstatSync(fd) };
  }
  let dir = fs.openSync('/', O_PATH | C.O_DIRECTORY);
  const viaProc = fs.statSync(at(dir));
  const direct = fs.fstatSync(dir);
  if (viaProc.ino !== direct.ino || viaProc.dev !== direct.dev)
    throw new Refused('PROC_UNAVAILABLE', '/proc/self/fd does not resolve');
  for (let i = 0; i < parts.length; i++) {
    let next;
    try {
      next = fs.openSync(at(dir, parts[i]), O_PATH | C.O_NOFOLLOW);
    } catch (error) {
      if (allowMissing && error.code === 'ENOENT' && i === parts.length - 1)
        return { dir: dir, missing: parts[i] };
      throw new Refused(reasonOf(error), error.code + ' at component ' + i);
    }
    const st = fs.fstatSync(next);
    if (i === parts.length - 1) {
      if (st.isSymbolicLink() && !allowLink) throw new Refused('SYMLINK', 'is a symbolic link');
      return { fd: next, st: st, dir: dir, name: parts[i] };
    }
    fs.closeSync(dir);
    if (st.isSymbolicLink())
      throw new Refused('SYMLINK', 'a component of the path is a symbolic link', { component: i });
    if (!st.isDirectory())
      throw new Refused('NOT_DIRECTORY', 'a component of the path is not a directory', { component: i });
    dir = next;
  }
  throw new Refused('IO_ERROR', 'unreachable');
}
function reopen(fd, flags) {
  try {
    return fs.openSync(at(fd), flags);
  } catch (error) {
    throw new Refused(reasonOf(error), error.code);
  }
}
function readStdin(limit) {
  const chunks = [];
  let total = 0;
  const buffer = Buffer.allocUnsafe(CHUNK);
  for (;;) {
    let n;
    try {
      n = fs.readSync(0, buffer, 0, buffer.length, null);
    } catch (error) {
      if (error.code === 'EAGAIN') continue;
      if (error.code === 'EOF') break;
      throw error;
    }
    if (n === 0) break;
    total += n;
    if (total > limit) throw new Refused('TOO_LARGE', 'payload larger than announced');
    chunks.push(Buffer.from(buffer.subarray(0, n)));
  }
  return Buffer.concat(chunks);
}
function opRead(request, path) {
  const found = classify(path, request.follow, false);
  if (!found.st.isFile())
    throw new Refused(found.st.isDirectory() ? 'IS_DIRECTORY' : 'NOT_REGULAR_FILE', describe(found.st));
  if (found.st.size > request.maxBytes && !request.truncate) {
    throw new Refused('TOO_LARGE', 'is ' + found.st.size + ' bytes', { size: found.st.size });
  }
  const fd = reopen(found.fd, C.O_RDONLY | C.O_NONBLOCK | C.O_NOCTTY);
  const st = fs.fstatSync(fd);
  if (!st.isFile() || st.ino !== found.st.ino || st.dev !== found.st.dev)
    throw new Refused('NOT_REGULAR_FILE', 'changed');
  const limit = request.maxBytes + 1;
  const buffer = Buffer.allocUnsafe(Math.min(CHUNK, limit));
  let total = 0;
  while (total < limit) {
    const n = fs.readSync(fd, buffer, 0, Math.min(buffer.length, limit - total), null);
    if (n === 0) break;
    let keep = n;
    if (total + n > request.maxBytes) {
      if (!request.truncate) throw new Refused('TOO_LARGE', 'grew past the limit', { size: total + n });
      keep = request.maxBytes - total;
    }
    writeAll(1, buffer.subarray(0, keep));
    total += keep;
    if (keep < n) return send({ ok: true, size: st.size, bytes: total, truncated: true });
  }
  send({ ok: true, size: st.size, bytes: total, truncated: false });
}
function opWrite(request, path) {
  const data = readStdin(request.length);
  if (data.length !== request.length) throw new Refused('IO_ERROR', 'short payload');
  const found = classify(path, request.follow, true);
  let existed = found !== null && found.missing === undefined;
  if (existed && !found.st.isFile()) {
    throw new Refused(found.st.isDirectory() ? 'IS_DIRECTORY' : 'NOT_REGULAR_FILE', describe(found.st));
  }
  if (existed && request.mode === 'create') throw new Refused('EXISTS', 'exists');
  let flags = C.O_WRONLY | C.O_NONBLOCK | C.O_NOCTTY;
  if (request.mode === 'append') flags |= C.O_APPEND;
  let fd;
  try {
    if (existed) {
      fd = fs.openSync(at(found.fd), flags);
    } else {
      flags |= C.O_CREAT | C.O_EXCL | (request.follow ? 0 : C.O_NOFOLLOW);
      const target = request.follow ? path : at(found.dir, found.missing);
      fd = fs.openSync(target, flags, request.fileMode);
    }
  } catch (error) {
    throw new Refused(reasonOf(error), error.code);
  }
  const st = fs.fstatSync(fd);
  if (!st.isFile()) throw new Refused('NOT_REGULAR_FILE', describe(st));
  try {
    if (!existed) fs.fchmodSync(fd, request.fileMode);
    if (request.mode === 'overwrite') fs.ftruncateSync(fd, 0);
    let offset = 0;
    while (offset < data.length) offset += fs.writeSync(fd, data, offset, data.length - offset, null);
    if (request.fsync) fs.fsyncSync(fd);
  } catch (error) {
    throw new Refused(reasonOf(error), error.code);
  }
  send({ ok: true, bytesWritten: data.length, created: !existed });
}
function statEntry(st) {
  return {
    type: typeOf(st),
    size: st.size,
    mode: st.mode & 0o7777,
    uid: st.uid,
    gid: st.gid,
    nlink: st.nlink,
    mtimeMs: st.mtimeMs,
  };
}
function opStat(request, path) {
  const found = classify(path, request.follow, false, true);
  send(Object.assign({ ok: true }, statEntry(found.st)));
}
function opList(request, path) {
  const found = classify(path, request.follow, false);
  if (!found.st.isDirectory()) throw new Refused('NOT_DIRECTORY', describe(found.st));
  const fd = reopen(found.fd, C.O_RDONLY | C.O_DIRECTORY | C.O_NONBLOCK);
  const dir = fs.opendirSync(at(fd), { encoding: 'buffer', bufferSize: 128 });
  const names = [];
  let truncated = false;
  for (;;) {
    const entry = dir.readSync();
    if (entry === null) break;
    if (names.length >= request.maxEntries) {
      truncated = true;
      break;
    }
    names.push(Buffer.isBuffer(entry.name) ? entry.name : Buffer.from(entry.name));
  }
  dir.closeSync();
  names.sort(Buffer.compare);
  const entries = names.map((name) => {
    let info;
    try {
      info = statEntry(fs.lstatSync(at(fd, name)));
    } catch (error) {
      info = { type: 'unknown', error: reasonOf(error) };
    }
    return Object.assign({ name: name.toString('base64') }, info);
  });
  writeAll(1, Buffer.from(JSON.stringify(entries)));
  send({ ok: true, count: entries.length, truncated: truncated });
}
try {
  const arg = process.argv[1] || '';
  // The harness's own request (base64 JSON it wrote into argv), not the student's.
  // eslint-disable-next-line no-restricted-syntax
  const request = JSON.parse(Buffer.from(arg.slice('karotte-request:'.length), 'base64').toString('utf8'));
  const path = Buffer.from(request.path, 'base64');
  if (request.op === 'read') opRead(request, path);
  else if (request.op === 'write') opWrite(request, path);
  else if (request.op === 'list') opList(request, path);
  else if (request.op === 'stat') opStat(request, path);
  else throw new Refused('IO_ERROR', 'unknown op');
} catch (error) {
  if (error instanceof Refused)
    send(Object.assign({ ok: false, reason: error.reason, message: error.message }, error.extra));
  else
    send({
      ok: false,
      reason: reasonOf(error),
      message: String(error && error.code ? error.code : error).slice(0, 200),
    });
}
