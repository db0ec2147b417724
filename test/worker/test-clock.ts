/**
 * The clock of the test Worker's runners and API: real time plus an offset
 * that tests move with `advanceClock` (from `test/helpers`) or through the
 * workerd test kit, so a '24 hours' sleep or a '7 days' timeout is tested
 * without waiting. One clock for both: the test kit's (see src/testing/workerd-clock.ts).
 */
export { testKitClock as testClock } from '../../src/testing/workerd-clock';
