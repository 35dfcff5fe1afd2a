// The first file `npm run setup|test|karotte` runs, on whatever Node.js the machine has.
// Written for the oldest Node.js that can get this far, so that an old one fails with a clear
// message instead of a SyntaxError: the real scripts (ES modules with top-level await) need
// Node.js 18+ to start, and then run themselves again on the project's Node.js when this one
// is older than what the project's tools need (scripts/tools.mjs).
'use strict';
var path = require('path');

var MIN_START_MAJOR = 18;
var major = Number(process.versions.node.split('.')[0]);
var name = process.argv[2];
var scripts = { setup: 'setup.mjs', test: 'test.mjs', karotte: 'karotte.mjs' };

warnOfSharedCompileCache();
if (!Object.prototype.hasOwnProperty.call(scripts, name)) {
  process.stderr.write('usage: node scripts/bootstrap.cjs setup|test|karotte [args...]\n');
  process.exit(2);
}
if (!(major >= MIN_START_MAJOR)) {
  process.stderr.write(
    '[karotte] Node.js ' +
      process.versions.node +
      ' is too old to start setup: it needs Node.js ' +
      MIN_START_MAJOR +
      ' or newer (with its npm), and then installs the Node.js 24 the project runs on by itself.\n' +
      '[karotte] Install a newer Node.js (Debian 12 and Ubuntu 24.04 ship 18; or Node.js 22/24 from nodejs.org) and run `npm run setup` again.\n',
  );
  process.exit(1);
}
var script = path.join(__dirname, scripts[name]);
// The script sees the same argv as when run directly: `node scripts/<name>.mjs args...`.
process.argv.splice(1, 2, script);
// Through Function so that a Node.js without import() fails above, not while parsing this file.
new Function('specifier', 'return import(specifier)')(require('url').pathToFileURL(script).href).catch(
  function (error) {
    process.stderr.write('[karotte] ' + (error && error.stack ? error.stack : String(error)) + '\n');
    process.exit(1);
  },
);

// npm (11+, on a Node.js with a compile cache) and some tools keep compiled code in a shared
// directory by default, $TMPDIR/node-compile-cache, and load it in the next process. As root,
// a cache directory another user made first or can write lets that user run code as root: npm
// has already loaded it by the time this file runs, so all that can be done is to say so.
function warnOfSharedCompileCache() {
  if (!process.getuid || process.getuid() !== 0 || process.env.NODE_DISABLE_COMPILE_CACHE) return;
  var dir = process.env.NODE_COMPILE_CACHE || path.join(require('os').tmpdir(), 'node-compile-cache');
  var stats;
  try {
    stats = require('fs').lstatSync(dir);
  } catch (error) {
    return;
  }
  // 18 = 0o022: written by group or others.
  if (stats.isDirectory() && stats.uid === 0 && (stats.mode & 18) === 0) return;
  process.stderr.write(
    '[karotte] warning: ' +
      dir +
      ' (Node.js compile cache that npm run as root reads) is not a root-owned directory closed to others:' +
      ' whoever can write it can run code as root. Remove it, and run npm as root with NODE_DISABLE_COMPILE_CACHE=1.\n',
  );
}
