export { GraderError, isVerdictErrorCode } from './errors.js';
export type { GraderErrorCode, VerdictErrorCode } from './errors.js';
export {
  collectAndGrade,
  gradeSubmission,
  collectAndGradeOptionsSchema,
  gradeOptionsSchema,
} from './collect.js';
export type { CollectAndGradeOptions, GradeOptions } from './collect.js';
export type {
  StudentHandle,
  SubmissionCollector,
  CollectorReap,
  CollectorReclaim,
  CollectorCustody,
} from './collector.js';
export {
  createDefaultCollector,
  createSandboxCollector,
  studentFromSandbox,
  networkCheckFromSandbox,
} from './default-collector.js';
export type { DefaultCollectorOptions } from './default-collector.js';
export { recoverGraderLeftovers, recoverGraderLeftoversOptionsSchema } from './recover.js';
export type { RecoverGraderLeftoversOptions, RecoveredGrader, GraderRecoveryReport } from './recover.js';
export { studentLimitOutcome } from './limit-outcome.js';
export { evaluateJudge, preflightJudge, prepareJudge, PREPARED_MAX_AGE_MS } from './judge.js';
export type { Judge, JudgeContext, PreparedJudge, PrepareOptions } from './judge.js';
export { createExecutableJudge, executableJudgeOptionsSchema } from './judges/executable.js';
export type { ExecutableJudgeOptions } from './judges/executable.js';
export { checkGraderInterpreter, graderInterpreterOptionsSchema } from './judges/interpreter.js';
export type { GraderInterpreterCheck, GraderInterpreterOptions } from './judges/interpreter.js';
export { createFunctionJudge, functionJudgeOptionsSchema } from './judges/function.js';
export type { FunctionJudgeOptions, FunctionJudgeResult, JudgeFunction } from './judges/function.js';
export { createRegexJudge, regexJudgeOptionsSchema } from './judges/regex.js';
export type { RegexJudgeOptions } from './judges/regex.js';
export {
  createRubricJudge,
  rubricJudgeOptionsSchema,
  rubricCriterionSchema,
  renderRubricPrompt,
  parseRubricReply,
} from './judges/rubric.js';
export type {
  RubricJudgeOptions,
  RubricCriterion,
  RubricMaterial,
  RubricAssessmentRequest,
  RubricAssessment,
  RubricModel,
} from './judges/rubric.js';
export { allOf, anyOf, weighted } from './judges/compose.js';
export type { CompositeOptions, WeightedJudge } from './judges/compose.js';
export { scoreLimitsSchema } from './score.js';
export type { ScoreLimits } from './score.js';
export { verdictSchema, verdictJsonSchema, networkCheckSchema, VERDICT_SCHEMA_VERSION } from './verdict.js';
export type {
  Verdict,
  JudgeReport,
  JudgeKind,
  GraderFailure,
  GraderFailureReason,
  HostFault,
  LimitHit,
  NetworkCheck,
} from './verdict.js';
export { createJudgePool, judgePoolOptionsSchema } from './judge-pool.js';
export type { JudgePool, JudgePoolOptions, JudgePoolStats } from './judge-pool.js';
