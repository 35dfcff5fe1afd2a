import { reclaim } from '@karotte/file-guard';
import { GraderError } from './errors.js';
import type { CollectorReclaim, SubmissionCollector } from './collect.js';
import type { JsonValue } from './json.js';

/**
 * The collector assembled from the real primitives: proc-reaper's `reap()` (confirmed tier),
 * file-guard's `reclaim()` and `takeCustody()`.
 */
export function createDefaultCollector(): SubmissionCollector {
  return {
    reap: () => {
      throw new GraderError('CONFINEMENT_UNAVAILABLE', '@karotte/proc-reaper reap() is not available yet');
    },
    reclaim: async (student, options): Promise<CollectorReclaim> => {
      const result = await reclaim(student.uid, {
        roots: [...options.roots],
        exclude: [student.workDir],
        abortSignal: options.abortSignal,
      });
      return {
        ok: result.complete,
        // eslint-disable-next-line no-restricted-syntax -- our own serialisation of file-guard's result
        record: JSON.parse(JSON.stringify(result)) as JsonValue,
        misbehavior: result.misbehavior === undefined ? [] : [result.misbehavior],
      };
    },
    takeCustody: () => {
      throw new GraderError(
        'CONFINEMENT_UNAVAILABLE',
        '@karotte/file-guard takeCustody() is not available yet',
      );
    },
  };
}
