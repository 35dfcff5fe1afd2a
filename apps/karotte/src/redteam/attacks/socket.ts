import { defineAttack } from '../attack.js';
import { NODE } from '../fragments.js';

export default defineAttack({
  id: 'socket',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'binds a unix socket at the submission path',
  commands: [
    String.raw`rm -rf {{submission}}; ${NODE} -e "const s=require('net').createServer().listen(process.argv[1],()=>{s.unref();setTimeout(()=>process.exit(0),100)})" {{submission}}; ls -la {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['NOT_REGULAR_FILE'],
});
