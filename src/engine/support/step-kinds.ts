// The kinds of step, as stored (`StepKind`) and as the step API calls that record them
// (`RestartFromType`, also a history record's field): ground vocabulary, it imports nothing.

/** `patch`: a marker recorded by `step.patched` / `step.deprecatePatch`; `rollback`: the rollback of a `do` step of the same name; `webhook`: `step.webhook`; `child`: `step.invoke` / `step.start`. */
export type StepKind = 'do' | 'sleep' | 'wait' | 'patch' | 'rollback' | 'webhook' | 'child' | 'attributes';

/** The kinds of step a restart can name, by the step API call that records them. */
export const RESTART_FROM_TYPES = ['do', 'sleep', 'waitForEvent', 'webhook', 'invoke'] as const;
export type RestartFromType = (typeof RESTART_FROM_TYPES)[number];
