import type { ChangeType, EventKind } from './kinds';
import { sourceOf } from './kinds';

/**
 * The event document: the body a webhook delivers and, with its `id` added, an item of the pull
 * feed (POST /events/query). One function builds it for both, so a consumer can switch between
 * push and pull without changing its parser.
 */
export interface EventDocument {
  type: string;
  /** When the event was made (detected), ISO 8601 UTC. */
  timestamp: string;
  data: {
    entity: EventKind;
    source: string;
    changedAt: string;
    changedBy: string;
    record: Record<string, unknown>;
    /**
     * Fields of the record whose stored values do not fit the type the contract publishes (another
     * program wrote them into the accounting database): left out of `record`, named here
     * (docs/decisions/0370). Absent when there are none.
     */
    unreadableFields?: string[];
  };
}

/**
 * `user`: the row's user stamp (insusr for created, updusr for updated); `stamp`: the change time;
 * `unreadable`: the fields left out of `record` because their stored values cannot be read.
 */
export function eventDocument(
  kind: EventKind,
  change: ChangeType,
  at: Date,
  user: string | null,
  stamp: Date,
  record: Record<string, unknown>,
  unreadable: readonly string[] = [],
): EventDocument {
  return {
    type: `${kind}.${change}`,
    timestamp: at.toISOString(),
    data: {
      entity: kind,
      source: sourceOf(user),
      changedAt: stamp.toISOString(),
      changedBy: user ?? 'unknown',
      record,
      ...(unreadable.length > 0 ? { unreadableFields: [...unreadable] } : {}),
    },
  };
}
