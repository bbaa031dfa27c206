/**
 * `contact_supervisor` as pi sees it (C-SUP-1…3, C-INT-1…3): registered only
 * in a delegated child whose bridge metadata is complete and carries a
 * supervisor grant (the extension decides, from `process.env`). TypeBox
 * parameters: pi refuses a call outside the schema (an unknown `reason`, an
 * interview that is not an object with a `questions` array) before
 * `execute`; the session runtime checks the rest with the contract's texts
 * (a missing `message`, duplicate question ids, options on a `text`
 * question, …). Nothing is sent in either case.
 *
 * `execute` hands the parameters to the generation's session runtime; the
 * abort signal cancels a blocking wait (as for `ask`).
 */
import { StringEnum } from "@earendil-works/pi-ai"
import type { ToolDefinition } from "@earendil-works/pi-coding-agent"
import { type Static, Type } from "typebox"
import type { ContactSupervisorParams } from "../session/contactSupervisor.ts"
import type { ToolResult } from "../session/IntercomSession.ts"
import { CONTACT_SUPERVISOR_NAME } from "./names.ts"
import { toAgentResult } from "./tool.ts"

const InterviewOption = Type.Union([
  Type.String(),
  Type.Object({ label: Type.String() })
])

/**
 * The parameters of `contact_supervisor`.
 *
 * @category schemas
 * @since 0.1.0
 */
export const ContactSupervisorParameters = Type.Object({
  reason: StringEnum(["need_decision", "interview_request", "progress_update"] as const, {
    description:
      "'need_decision': a decision only the supervisor can make (waits for the answer); 'interview_request': structured questions (waits); 'progress_update': a short status note (does not wait)"
  }),
  message: Type.Optional(Type.String({
    description: "The question or update (required for need_decision and progress_update; an optional note for interview_request)"
  })),
  interview: Type.Optional(Type.Object({
    title: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    questions: Type.Array(Type.Object({
      id: Type.String({ description: "Unique id of the question" }),
      type: StringEnum(["single", "multi", "text", "image", "info"] as const, {
        description: "'single'/'multi' need options; 'info' is context only, not answered"
      }),
      question: Type.String(),
      options: Type.Optional(Type.Array(InterviewOption)),
      context: Type.Optional(Type.String())
    }), { description: "At least one question" })
  }, { description: "For interview_request: the questions for the supervisor" }))
})

/**
 * `contact_supervisor`'s parameters as pi hands them to `execute`.
 *
 * @category models
 * @since 0.1.0
 */
export type ContactSupervisorParameters = Static<typeof ContactSupervisorParameters>

const DESCRIPTION = `Contact the supervisor session that launched this subagent.
Use it only when you cannot continue without the supervisor, or to report progress on long work.
Do not use it to hand in your final result: that returns through the subagent runtime.

  contact_supervisor({ reason: "need_decision", message: "..." })          → ask for a decision and wait for the answer
  contact_supervisor({ reason: "interview_request", interview: {...} })    → structured questions; wait for the answers
  contact_supervisor({ reason: "progress_update", message: "..." })        → a short update; does not wait`

/**
 * The `contact_supervisor` tool; `run` reaches the current generation.
 *
 * @category constructors
 * @since 0.1.0
 */
export const contactSupervisorTool = (
  run: (params: ContactSupervisorParams, signal: AbortSignal | undefined) => Promise<ToolResult>
): ToolDefinition<typeof ContactSupervisorParameters, Readonly<Record<string, unknown>>> => ({
  name: CONTACT_SUPERVISOR_NAME,
  label: "Contact supervisor",
  description: DESCRIPTION,
  promptSnippet: "Use to reach the supervisor that launched this subagent: a blocking decision, structured questions, or a progress update.",
  promptGuidelines: [
    "Use contact_supervisor need_decision only when you cannot continue without the supervisor's decision; it waits for the answer.",
    "Do not use contact_supervisor for the final result of your task; finish normally instead."
  ],
  parameters: ContactSupervisorParameters,
  execute: async (_toolCallId, params, signal) => toAgentResult(await run(params, signal))
})
