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
