/**
 * A client's side of durable supervisor questions (`questions-v1`, C-DQ):
 * the question operations of `IntercomClient`, and the questions this
 * session (a child) is waiting on, asked again on every new connection
 * before it is used — a broker restart or a dropped connection must not end
 * the wait (C-DQ-6): the broker answers the re-ask with the saved state and
 * pushes the answer or the cancellation if there is one.
 *
 * Owned by one `IntercomClient`; its Map is touched only synchronously.
 */
import { Effect } from "effect"
import type { QuestionPageWire, QuestionReceiptWire, QuestionRecordWire } from "../protocol/questions.ts"
import type { ClientConnection } from "./ClientConnection.ts"
import { QuestionRefused, type QuestionsUnavailable } from "./errors.ts"
import type { ClientError } from "./models.ts"
import type { QuestionRequestFrame } from "./QuestionRequests.ts"

/**
 * Why a question operation failed: the broker refused it (`QuestionRefused`,
 * its `error` names why), it keeps no questions (`QuestionsUnavailable`), or
 * the connection failed.
 *
 * @category errors
 * @since 0.1.0
 */
export type QuestionError = QuestionRefused | QuestionsUnavailable | ClientError

/**
 * A child's durable question, as it asks it (C-SUP-18).
 *
 * @category models
 * @since 0.1.0
 */
export interface QuestionAsk {
  /** `[A-Za-z0-9_-]+`, unique: the message id of the question. */
  readonly questionId: string
  readonly reason: "need_decision" | "interview_request"
  /** The full text the supervisor reads. */
  readonly text: string
}

/**
 * Acting for a supervisor session other than the client's own (a CLI of the
 * supervisor's user). A bound child may not.
 *
 * @category models
 * @since 0.1.0
 */
export interface QuestionOwner {
  readonly owner?: string | undefined
}

/**
 * The question operations `IntercomClient` offers; docs/client.md,
 * "Durable questions", says what each does.
 *
 * @category models
 * @since 0.1.0
 */
export interface QuestionOperations {
  /**
   * A bound child asks a durable question: saved by the broker before its
   * supervisor is notified. Asked again after every reconnect until
   * `questionDone`. Returns the saved question (its state may already be
   * answered or cancelled when re-asked).
   */
  readonly askQuestion: (question: QuestionAsk) => Effect.Effect<QuestionRecordWire, QuestionError>
  /** The child got its answer: the broker marks the question `answered` (C-DQ-9); no more re-asks. */
  readonly questionReceived: (questionId: string) => Effect.Effect<void, ClientError>
  /** Stop asking `questionId` again after reconnects (the wait ended some other way). */
  readonly questionDone: (questionId: string) => Effect.Effect<void>
  /** One page of the owner's questions, unresolved first (C-DQ-13). */
  readonly listQuestions: (
    request?: { readonly offset?: number | undefined; readonly limit?: number | undefined } & QuestionOwner
  ) => Effect.Effect<QuestionPageWire, QuestionError>
  /** One question in full (the owner's, or the child's own). */
  readonly getQuestion: (questionId: string, owner?: QuestionOwner) => Effect.Effect<QuestionRecordWire, QuestionError>
  /** Saves an answer (C-DQ-4, C-DQ-5) and sends it to the waiting child, or reports the revival (C-DQ-10). */
  readonly answerQuestion: (
    questionId: string,
    text: string,
    owner?: QuestionOwner
  ) => Effect.Effect<QuestionReceiptWire, QuestionError>
  /** Cancels a question and aborts its live waiter (C-DQ-11). */
  readonly stopQuestion: (questionId: string, owner?: QuestionOwner) => Effect.Effect<QuestionReceiptWire, QuestionError>
}

const withOwner = (owner: QuestionOwner | undefined): { readonly owner?: string } =>
  owner?.owner === undefined ? {} : { owner: owner.owner }

/** The part of a result a request expects, or a clear refusal when the broker sent none. */
const field = <A>(value: A | undefined, what: string): Effect.Effect<A, QuestionRefused> =>
  value === undefined
    ? Effect.fail(new QuestionRefused({ error: "MalformedAnswer", reason: `The broker's answer carried no ${what}` }))
    : Effect.succeed(value)

/** The questions this client waits on, and the question operations; see the module header. */
export class ClientQuestions {
  private readonly waiting = new Map<string, QuestionAsk>()

  /** Asks every question still waited on again, on a new connection; returns what could not be asked. */
  restore(connection: ClientConnection, timeoutMs: number): Effect.Effect<ReadonlyArray<string>> {
    return Effect.forEach(
      [...this.waiting.values()],
      (question) =>
        connection.question({ type: "question_ask", ...question }, timeoutMs).pipe(
          Effect.as(undefined),
          Effect.catch((error) => Effect.succeed(`question ${question.questionId} not re-asked: ${error.message}`))
        )
    ).pipe(Effect.map((problems) => problems.filter((problem) => problem !== undefined)))
  }

  /** The operations, over a way to reach the current connection. */
  operations(
    withConnection: <A, E>(use: (connection: ClientConnection) => Effect.Effect<A, E>) => Effect.Effect<A, E | ClientError>,
    timeoutMs: number
  ): QuestionOperations {
    const request = (frame: QuestionRequestFrame) => withConnection((c) => c.question(frame, timeoutMs))
    return {
      askQuestion: (question) =>
        Effect.suspend(() => {
          this.waiting.set(question.questionId, question)
          return request({ type: "question_ask", ...question }).pipe(
            Effect.flatMap((result) => field(result.question, "question"))
          )
        }),
      questionReceived: (questionId) =>
        Effect.suspend(() => {
          this.waiting.delete(questionId)
          return withConnection((c) => c.post({ type: "question_received", questionId }))
        }),
      questionDone: (questionId) => Effect.sync(() => void this.waiting.delete(questionId)),
      listQuestions: (page = {}) =>
        request({
          type: "question_list",
          ...(page.offset === undefined ? {} : { offset: page.offset }),
          ...(page.limit === undefined ? {} : { limit: page.limit }),
          ...withOwner(page)
        }).pipe(Effect.flatMap((result) => field(result.page, "page"))),
      getQuestion: (questionId, owner) =>
        request({ type: "question_get", questionId, ...withOwner(owner) }).pipe(
          Effect.flatMap((result) => field(result.question, "question"))
        ),
      answerQuestion: (questionId, text, owner) =>
        request({ type: "question_answer", questionId, text, ...withOwner(owner) }).pipe(
          Effect.flatMap((result) => field(result.receipt, "receipt"))
        ),
      stopQuestion: (questionId, owner) =>
        request({ type: "question_stop", questionId, ...withOwner(owner) }).pipe(
          Effect.flatMap((result) => field(result.receipt, "receipt"))
        )
    }
  }
}
