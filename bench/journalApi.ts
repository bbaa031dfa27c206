/**
 * Which journal API a build's StoreJournal has, for bench/durable-path.ts,
 * which measures two builds (any two commits) side by side. Before the
 * eighth stop `mailGone(recordKey)` named a message by its record key; since,
 * `mailGone(senderKey, id, …)` by its sender and id, and mailkey2 added two
 * optional parameters (a target session and a keep test; task byid made the
 * target required and dropped the keep test). Only the first
 * form takes one parameter, so that is what is checked: never the later
 * form's exact count, which grew once already (review revmailkey2 probe 4).
 */

/** True when `mailGone` names a message by its sender and id (any build since the eighth stop), false for `mailGone(recordKey)`. */
export const mailGoneBySenderAndId = (mailGone: (...args: ReadonlyArray<never>) => unknown): boolean => mailGone.length !== 1
