// The project's own world through the conformance suite a contributor's world runs
// (`@karotte/core/testing`): createSandboxWorld, with no capability declared missing.
import { createSandboxWorld } from '../sandbox-world.js';
import { testStudentWorld } from './index.js';

testStudentWorld('createSandboxWorld', createSandboxWorld);
