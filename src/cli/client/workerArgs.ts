/**
 * How `intercom stop` and `intercom result` tell their argument's kind apart
 * (C-WKR-2; docs/cli.md "Supervised workers"). Both commands existed before
 * worker operations (durable questions, archived reports), and they keep
 * working exactly as before:
 *
 * - `result <arg>`: an argument starting `result:` is an archived report's
 *   address; anything else is a worker's run handle (live result).
 * - `stop <arg>`: with `--session <id>` the argument is a durable question
 *   of that supervisor session (as before); without it, a worker's run handle.
 *
 * Pure functions from the command line to the tool's parameters.
 */
import * as Option from "effect/Option"
import { RESULT_REF_PREFIX } from "../../protocol/results.ts"
import type { IntercomToolParams } from "../../session/IntercomSession.ts"

/** The `result` command's target: `{ ref }` for `result:<UUID>`, else `{ run }`. */
export const resultTarget = (argument: string): Pick<IntercomToolParams, "ref" | "run"> =>
  argument.trim().startsWith(RESULT_REF_PREFIX) ? { ref: argument } : { run: argument }

/** The `stop` command's target: the question of `--session` when given, else the worker `run`. */
export const stopTarget = (
  argument: string,
  owner: Option.Option<string>
): Pick<IntercomToolParams, "questionId" | "owner" | "run"> =>
  Option.match(owner, {
    onNone: () => ({ run: argument }),
    onSome: (id) => ({ owner: id.trim(), questionId: argument })
  })
