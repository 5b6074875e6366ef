import type { Logger } from 'pino';
import { combineObservers } from '../engine/combineObservers.js';
import { Outcome, type EngineObserver, type OutcomeEvent } from '../engine/outcomes.js';
import type { RateLimitWatch } from './rateLimitWarnings.js';

const loud: ReadonlySet<Outcome> = new Set<Outcome>([Outcome.PARKED, Outcome.DEAD_LETTERED, Outcome.SKIPPED]);

/** The user's observer, then the worker's own; the worker's alone when the user gave none. */
export function withUserObserver(user: EngineObserver | undefined, own: EngineObserver): EngineObserver {
  return user ? combineObservers(user, own) : own;
}

/**
 * Logs outcomes (debug; PARKED, DEAD_LETTERED and SKIPPED at warn), commits (debug), the finished
 * offsets a commit's metadata listed at assignment (info; metadata ignored: warn), a fallback's
 * circuit changes (an opening at warn), shadow disagreements with their key (info) and fatal errors.
 */
export function loggingObserver(logger: Logger, onFatal: (error: Error) => void, rateLimits: RateLimitWatch): EngineObserver {
  return {
    outcome(event: OutcomeEvent) {
      if (loud.has(event.outcome)) logger.warn(event, `event ${event.outcome}`);
      else logger.debug(event, `event ${event.outcome}`);
    },
    modelCallEnded(call) {
      rateLimits.warnings.callEnded(call);
    },
    circuit(change) {
      if (change.state === 'open')
        logger.warn(
          change,
          `fallback '${change.fallback}' decides for agentStep '${change.step}': its circuit opened; the step's last call: ${change.cause ?? 'unknown'}`,
        );
      else logger.info(change, `fallback circuit of agentStep '${change.step}' ${change.state}`);
    },
    shadowDisagreed(disagreement) {
      logger.info(disagreement, `shadow disagreed on key ${JSON.stringify(disagreement.key)}`);
    },
    committed(commit) {
      logger.debug(commit, 'committed');
    },
    resumed(resume) {
      if (resume.ignored) logger.warn(resume, `commit metadata ignored: ${resume.ignored}; its offsets are redelivered`);
      else if (resume.finishedAbove > 0) logger.info(resume, 'finished offsets above the committed one: skipped when redelivered');
    },
    // A refused commit: the Kafka log has logged it at warn already.
    fatal(error) {
      logger.error({ err: error }, 'engine failed');
      onFatal(error);
    },
  };
}
