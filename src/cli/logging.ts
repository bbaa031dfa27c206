/**
 * Log output of the CLI: one readable line per event on stderr, e.g.
 * `2025-01-03T14:22:47.570Z INFO session joined: alice (3f2a…) sessionId=3f2a…`.
 * stdout stays reserved for command results (the broker's startup line).
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Formatter from "effect/Formatter"
import type * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as References from "effect/References"
import type * as Scope from "effect/Scope"

const formatPart = (value: unknown): string =>
  typeof value === "string" ? value : Formatter.format(value)

const formatAnnotation = (value: unknown): string => {
  const text = formatPart(value)
  return /^[^\s"=]*$/.test(text) ? text : JSON.stringify(text)
}

/** `<ISO time> <LEVEL> <message parts> [key=value annotations] [: cause]`. */
export const formatLine = (options: Logger.Options<unknown>): string => {
  const parts = Array.isArray(options.message) ? options.message : [options.message]
  let line = `${options.date.toISOString()} ${options.logLevel.toUpperCase()} ${parts.map(formatPart).join(" ")}`
  const annotations = options.fiber.getRef(References.CurrentLogAnnotations)
  for (const [key, value] of Object.entries(annotations)) {
    line += ` ${key}=${formatAnnotation(value)}`
  }
  if (options.cause.reasons.length > 0) {
    line += `\n${Cause.pretty(options.cause)}`
  }
  return line
}

/** A logger that writes `formatLine`'s line to stderr. */
export const lineLogger: Logger.Logger<unknown, void> = Logger.withConsoleError(Logger.make(formatLine))

/** Replaces the default logger with `lineLogger`. */
export const loggingLayer: Layer.Layer<never> = Logger.layer([lineLogger])

/**
 * A broker whose parent went away can find its stdout/stderr pipe closed; an
 * unhandled EPIPE there would crash it. For the broker's lifetime, ignore
 * write errors on both streams: losing a log line is better than losing the broker.
 */
export const ignoreStdioErrors: Effect.Effect<void, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    const ignore = () => {}
    process.stdout.on("error", ignore)
    process.stderr.on("error", ignore)
    return ignore
  }),
  (ignore) =>
    Effect.sync(() => {
      process.stdout.off("error", ignore)
      process.stderr.off("error", ignore)
    })
).pipe(Effect.asVoid)
