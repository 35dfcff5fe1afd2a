export type { KillableGroup, GroupKillResult } from './group-types.js';
