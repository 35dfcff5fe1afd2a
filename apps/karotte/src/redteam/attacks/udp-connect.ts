import { defineAttack } from '../attack.js';
import { NODE } from '../fragments.js';

export default defineAttack({
  id: 'udp-connect',
  class: 'network',
  languages: ['any'],
  why: 'opens UDP sockets towards public and metadata addresses (connect only: a route lookup)',
  commands: [
    String.raw`${NODE} -e "const d=require('dgram');for(const [f,a] of [['udp4','1.1.1.1'],['udp4','169.254.169.254'],['udp6','2606:4700:4700::1111']]){const s=d.createSocket(f);s.on('error',e=>{console.log(a,e.code);s.close()});s.connect(53,a,()=>{console.log(a,'ROUTE');s.close()})}"`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
