/**
 * A `question_list` page as one frame (C-BRK-3, helper qsize). The store pages by count (C-DQ-13: up to 100
 * summaries), and a summary carries previews of up to 2,048 characters of the question and of its answer
 * (C-DQ-14), each character up to six bytes as JSON text: a full page can pass 1 MiB (about 2.5 MB at most), and
 * the writer's guard would drop it. `fitPage` closes the page before the summary that would take its frame past the
 * limit, so the page is written and `nextOffset` names the first summary left out. A summary always fits alone: its
 * previews are capped and its ids and name are bounded, so a page is never empty while questions remain. Owned by
 * nobody: a pure function the question fiber (QuestionWorker.ts) runs on each page before it writes it.
 */
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { frameBytes, leadingThatFit } from "../protocol/framing.ts"
import type { QuestionPage } from "../store/questionModel.ts"
import { fitsFrame } from "./RecipientFrames.ts"

/**
 * The frame for `page` (`frameOf`: the `question_result` carrying it), with as many of its summaries, from the
 * first, as fit 1 MiB — all of them when the whole page does (the page as the store gave it, built once). Else the
 * page is cut before the first summary that would pass the limit (at least one is kept) and `nextOffset` is set to
 * that summary's offset; `total`, `offset` and `limit` stay as the store gave them. Sized without building the cut
 * frame twice: the frame with no summaries and `nextOffset` as long as any it can take, plus each summary's bytes
 * and a comma between two.
 *
 * @category encoding
 * @since 0.1.0
 */
export const fitPage = (page: QuestionPage, frameOf: (page: QuestionPage) => string): string => {
  const whole = frameOf(page)
  if (fitsFrame(whole, "")) return whole
  const questions = page.questions
  // A cut page's `nextOffset` is below `offset + questions.length`: sized with that, it has at least as many digits.
  const empty = frameBytes(frameOf({ ...page, questions: [], nextOffset: page.offset + questions.length }))
  // At least one summary goes, whatever its size.
  const kept = Math.min(questions.length, Math.max(1, leadingThatFit(questions, MAX_FRAME_BYTES - empty)))
  // Only a lone summary over the limit gets here whole (none can be: see the module header); it goes as it is.
  if (kept === questions.length) return whole
  return frameOf({ ...page, questions: questions.slice(0, kept), nextOffset: page.offset + kept })
}
