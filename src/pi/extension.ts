/**
 * The pi extension (`effect-intercom/pi`, the `pi.extensions` entry of
 * package.json): a thin adapter that gives the session runtime a pi host and
 * registers pi's surfaces — the `intercom` tool (and `load_intercom` when the
 * tool is exposed lazily; `contact_supervisor` in a delegated child with a
 * supervisor grant), the `/intercom` command and its shortcut, the
 * renderers, the lifecycle handlers, and the provider that authorizes a
 * launcher extension's children (`AUTHORIZE_CHILD_EVENT` on `pi.events`,
 * C-SUP-7).
 *
 * Nothing starts in the factory (it also runs for `pi --list-models`): it
 * only reads two keys of config.json and registers. Each `session_start`
 * starts a generation (`generation.ts`, loaded on first need so pi's startup
 * does not pay for it) and each `session_shutdown`, whatever its reason,
 * closes it (C-ORD-35). pi calls the factory again for every session runtime,
 * so the current generation is state of this factory call, reached by every
 * callback through `current` — never module state. So are the messages
 * handed to pi's queue (`QueuedInbound`): they outlive a generation change,
 * and pi's `message_end` reads them synchronously, never waiting for a
 * generation to start.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent"
import type { ContactSupervisorParams } from "../session/contactSupervisor.ts"
import type { IntercomToolParams, ToolResult } from "../session/IntercomSession.ts"
import { readChildBridge } from "../session/supervisorBridge.ts"
import { hasSupervisorGrant } from "../session/SupervisorContact.ts"
import { AUTHORIZE_CHILD_EVENT, readAuthorizeChildRequest } from "./authorize.ts"
import { openIntercom } from "./command.ts"
import { factoryConfig } from "./factoryConfig.ts"
import type { LifecycleEvent, PiGeneration } from "./generation.ts"
import { deliveredMessage, MESSAGE_TYPE, usedIntercom } from "./entries.ts"
import { COMMAND_NAME } from "./names.ts"
import { makeQueuedInbound, savedDetails } from "./queuedInbound.ts"
import { registerRenderers } from "./render.ts"
import { contactSupervisorTool } from "./supervisorTool.ts"
import { intercomTool, loaderTool } from "./tool.ts"

const notStarted: ToolResult = {
  text: "Intercom not connected: no pi session has started",
  isError: true,
  details: { error: "IntercomNotConnected" }
}

/**
 * The extension factory pi calls with its `ExtensionAPI`.
 *
 * @category constructors
 * @since 0.1.0
 */
export default function intercomExtension(pi: ExtensionAPI): void {
  const config = factoryConfig()
  const lazy = config.toolVisibility === "after-first-use"
  // C-SUP-1: a delegated child with complete bridge metadata and a grant gets contact_supervisor.
  const bridge = readChildBridge(process.env)
  const childBridge = hasSupervisorGrant(bridge) ? bridge : undefined
  /** The generation of the current pi session, while one runs. */
  let current: Promise<PiGeneration> | undefined
  /** The intercom messages in pi's queue and their withdrawals, for every generation of this session runtime. */
  const queued = makeQueuedInbound()

  const withGeneration = <A>(fallback: A, f: (generation: PiGeneration) => A | Promise<A>): Promise<A> =>
    current === undefined ? Promise.resolve(fallback) : current.then(f, () => fallback)

  const lifecycle = (event: LifecycleEvent, ctx: ExtensionContext): void => {
    void withGeneration(undefined, (generation) => {
      generation.observe(ctx)
      generation.lifecycle(event)
    })
  }

  const run = (params: IntercomToolParams, signal: AbortSignal | undefined) =>
    withGeneration(notStarted, (generation) => generation.tool(params, signal))
  /** The overlay's and the command's actions: the tool's, without exposing a lazy tool. */
  const runFromUI = (params: IntercomToolParams) =>
    withGeneration(notStarted, (generation) => generation.tool(params, undefined, true))

  pi.registerTool(intercomTool(run, !lazy))
  if (lazy) pi.registerTool(loaderTool(() => withGeneration(notStarted, (generation) => generation.loadTool())))
  if (childBridge !== undefined) {
    pi.registerTool(contactSupervisorTool((params: ContactSupervisorParams, signal) =>
      withGeneration(notStarted, (generation) => generation.contactSupervisor(params, signal))
    ))
  }
  registerRenderers(pi)

  // C-SUP-7: the provider for launcher extensions. Claimed synchronously (the launcher
  // learns a provider exists), answered once the broker has issued the capability or refused.
  // A launcher's `respond` that throws is its bug: reported on stderr, as pi reports a throwing
  // event handler — left unhandled, the rejection would end the pi process.
  pi.events.on(AUTHORIZE_CHILD_EVENT, (data) => {
    const read = readAuthorizeChildRequest(data)
    if (read._tag === "Malformed") {
      read.respond?.({ ok: false, error: `Invalid ${AUTHORIZE_CHILD_EVENT} request: ${read.error}` })
      return
    }
    const { request } = read
    request.claim?.()
    void withGeneration(
      { ok: false, error: notStarted.text },
      (generation) => generation.authorizeChild(request)
    ).then(request.respond).catch((cause: unknown) => {
      console.error(`intercom: the launcher's respond to ${AUTHORIZE_CHILD_EVENT} threw: ${String(cause)}`)
    })
  })

  pi.registerCommand(COMMAND_NAME, {
    description: "List intercom sessions (\"all\" includes other projects) and send a message",
    handler: async (args, ctx) => openIntercom(ctx, args.trim(), runFromUI)
  })
  pi.registerShortcut(config.shortcut ?? "alt+m", {
    description: "Open the intercom",
    handler: async (ctx) => openIntercom(ctx, "", runFromUI)
  })

  pi.on("session_start", async (_event, ctx) => {
    // Read now: by the time the runtime module has loaded, this ctx may already be stale.
    const seed = {
      sessionId: ctx.sessionManager.getSessionId(),
      name: pi.getSessionName(),
      cwd: ctx.cwd,
      model: ctx.model?.id ?? "unknown",
      hasUI: ctx.hasUI,
      mode: ctx.mode,
      usedIntercom: usedIntercom(ctx.sessionManager.getEntries()),
      sessionFile: ctx.sessionManager.getSessionFile()
    }
    // A session_start with no session_shutdown before it (a host that binds extensions again)
    // replaces the current generation: that one leaves the bus first, or it would stay
    // registered with nobody to close it, and re-register the same id whenever it reconnects.
    const previous = current
    const replaced = previous === undefined ? Promise.resolve() : previous.then((generation) => generation.close(), () => undefined)
    const starting = replaced.then(() => import("./generation.ts")).then((module) =>
      module.startGeneration({ pi, ctx, seed, toolVisibility: config.toolVisibility, childBridge, queued })
    )
    starting.catch(() => undefined) // reported where it is used (withGeneration); never unhandled
    current = starting
    // Print and json modes run their prompt right after this and exit: the session must be
    // on the bus, with its journal restored, first. The TUI and RPC do not wait.
    if (ctx.mode === "print" || ctx.mode === "json") await starting.then((generation) => generation.ready)
  })
  pi.on("session_shutdown", async () => {
    const closing = current
    current = undefined
    await closing?.then((generation) => generation.close(), () => undefined)
  })
  pi.on("session_info_changed", (event, ctx) => lifecycle({ _tag: "Identity", update: { name: event.name } }, ctx))
  pi.on("model_select", (event, ctx) => lifecycle({ _tag: "Identity", update: { model: event.model.id } }, ctx))
  pi.on("agent_start", (_event, ctx) => lifecycle({ _tag: "Status", status: "thinking" }, ctx))
  pi.on("tool_execution_start", (event, ctx) => lifecycle({ _tag: "Status", status: `tool:${event.toolName}` }, ctx))
  pi.on("tool_execution_end", (_event, ctx) => lifecycle({ _tag: "Status", status: "thinking" }, ctx))
  // agent_end is not idle: pi may still retry or run queued messages.
  // Awaited by pi: the idle presence (acceptsAsks, C-HLT-3) reaches the broker before the run counts as settled.
  pi.on("agent_settled", async (_event, ctx) => {
    // pi saved what it held while the run streamed (its end flushes them): watched no longer. One handed over
    // meanwhile (pi streams till this returns) is not in the session yet, and stays watched.
    queued.settled(() => savedDetails(ctx.sessionManager.getEntries()))
    lifecycle({ _tag: "EndTurn" }, ctx)
    lifecycle({ _tag: "Status", status: "idle" }, ctx)
    await withGeneration(undefined, (generation) => generation.applied())
  })
  // pi's last look at a message before it joins the context the model's request is built from: pi
  // replaces the message with the one returned, in its state and in what it saves. A message its sender
  // withdrew while it waited in pi's queue (a steer, a follow-up) enters marked withdrawn, passive
  // (queuedInbound.ts); every other message, ours or not, is left as it is. Answered synchronously, from
  // this factory call's `queued`: pi's agent loop waits for it, and a generation may be starting.
  // The message a turn works on is what `reply` without `to` answers (C-RPL-2): one that started the
  // turn or the follow-up after it. A message steered into a running turn does not take it over — else
  // a plain message from a third session would catch the answer the turn owes its asker.
  pi.on("message_end", (event, ctx) => {
    const message = event.message
    if (message.role !== "custom" || message.customType !== MESSAGE_TYPE) return
    const withdrawn = queued.entering(message)
    const details = deliveredMessage(withdrawn?.details ?? message.details)
    if (details !== undefined && (details.intent === "trigger" || details.intent === "followUp")) {
      lifecycle({ _tag: "BeginTurn", message: { from: details.from, messageId: details.messageId } }, ctx)
    }
    return withdrawn === undefined ? undefined : { message: { ...message, ...withdrawn } }
  })
}
