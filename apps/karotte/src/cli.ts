import process from 'node:process';
import { main } from './main.js';

// The bin entry: everything testable lives in main.ts; this file only wires the process.
const code = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr });
process.exitCode = code;
