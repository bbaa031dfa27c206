/**
 * The session-side topic errors (C-TOP-17). The client's `TopicRefused` and
 * `TopicsUnavailable` pass through as they are.
 */
import { Data } from "effect"

/**
 * The session changed (its generation ended) while a topic action was in
 * flight: nothing was saved in this session (C-TOP-17).
 *
 * @category errors
 * @since 0.1.0
 */
export class TopicSessionChanged extends Data.TaggedError("TopicSessionChanged")<{}> {
  override get message(): string {
    return "Session changed; no topic state saved in this session."
  }
}
