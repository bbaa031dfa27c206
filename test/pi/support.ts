/**
 * Real pi sessions for the extension's tests, with no LLM: pi's SDK
 * (`AgentSessionRuntime`, so `/new`, `/resume`, `/fork`, reload and quit run
 * their real lifecycle) with pi-ai's faux provider scripting each model turn.
 * The extension is loaded from `dist/pi/extension.js` through pi's own loader,
 * exactly as `pi -e` / `pi install` load it.
 *
 * A world is one private agent dir (PI_CODING_AGENT_DIR points at it for this
 * test file's worker) whose broker the extension auto-spawns; `closeWorld`
 * stops that broker and removes the dir.
 */
import {
  type AssistantMessage,
  fauxAssistantMessage,
  type FauxProviderHandle,
  fauxProvider,
  type FauxResponseStep,
  fauxText,
  fauxToolCall,
  type JsonObject,
  type Message
} from "@earendil-works/pi-ai"
import {
  type AgentSession,
  type AgentSessionEvent,
  type AgentSessionRuntime,
  createAgentSessionFromServices,
  createAgentSessionRuntime,
  createAgentSessionServices,
  type CreateAgentSessionRuntimeFactory,
  type ExtensionFactory,
  type ExtensionUIContext,
  type Theme,
  ModelRuntime,
  SessionManager,
  SettingsManager
} from "@earendil-works/pi-coding-agent"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { built } from "../support/built.ts"

export const ROOT = fileURLToPath(new URL("../../", import.meta.url))
/** The compiled extension, as the package ships it. */
export const EXTENSION = path.join(ROOT, "dist", "pi", "extension.js")
export const INTERCOM_BIN = path.join(ROOT, "dist", "bin", "intercom.mjs")
/** A test-only extension with the `wait_for_intercom` tool (busy until a message is handed to pi). */
export const WAIT_TOOL = path.join(ROOT, "test", "pi", "fixtures", "waitForIntercom.ts")

export interface World {
  readonly root: string
  readonly agentDir: string
  readonly cwd: string
}

/** A private agent dir and cwd; this worker's extension instances use it. Fails at once when dist/ was not built. */
export const makeWorld = (config?: Record<string, unknown>): World => {
  // Every world loads the compiled extension, which spawns the bundled broker.
  built(EXTENSION)
  built(INTERCOM_BIN)
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "eipi-"))
  const agentDir = path.join(root, "agent")
  const cwd = path.join(root, "work")
  fs.mkdirSync(cwd, { recursive: true })
  fs.mkdirSync(path.join(agentDir, "intercom"), { recursive: true })
  if (config !== undefined) writeConfig({ root, agentDir, cwd }, config)
  process.env["PI_CODING_AGENT_DIR"] = agentDir
  process.env["PI_OFFLINE"] = "1"
  process.env["PI_SKIP_VERSION_CHECK"] = "1"
  process.env["PI_TELEMETRY"] = "0"
  return { root, agentDir, cwd }
}

export const writeConfig = (world: World, config: Record<string, unknown>): void =>
  fs.writeFileSync(path.join(world.agentDir, "intercom", "config.json"), JSON.stringify(config))

/** Stops the broker the extension spawned (if any) and removes the world. */
export const closeWorld = (world: World): void => {
  try {
    execFileSync(process.execPath, [INTERCOM_BIN, "broker", "stop", "--dir", world.agentDir], { stdio: "ignore" })
  } catch {
    // no broker ran
  }
  fs.rmSync(world.root, { recursive: true, force: true })
}

/** A scripted tool call turn. */
export const call = (tool: string, args: JsonObject): AssistantMessage =>
  fauxAssistantMessage(fauxToolCall(tool, args), { stopReason: "toolUse" })
/** A scripted final text turn. */
export const say = (text: string): AssistantMessage => fauxAssistantMessage(fauxText(text))

/** The text of a message as the model saw it. */
export const textOf = (message: Message | { readonly role: string; readonly content?: unknown }): string => {
  const content = "content" in message ? message.content : undefined
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content.map((part: unknown) =>
    typeof part === "object" && part !== null && Reflect.get(part, "type") === "text" ? String(Reflect.get(part, "text")) : ""
  ).join("")
}

export interface Pi {
  readonly runtime: AgentSessionRuntime
  readonly faux: FauxProviderHandle
  /** Every model call's messages, in order. */
  readonly calls: Array<ReadonlyArray<Message>>
  /** Every session event since open (across replacements). */
  readonly events: Array<AgentSessionEvent>
  /** Every extension error pi reported (a stale-context throw would land here). */
  readonly errors: Array<string>
  /** Called with every later event, across replacements, until it returns true. */
  readonly watch: (watcher: (event: AgentSessionEvent) => boolean) => void
  readonly session: () => AgentSession
  /** Queues model turns; each records what the model was sent. */
  readonly script: (...steps: ReadonlyArray<AssistantMessage | ((messages: ReadonlyArray<Message>) => AssistantMessage)>) => void
  /** Binds extensions again after a replacement (emits session_start). */
  readonly rebind: () => Promise<void>
  /** Quits (session_shutdown "quit"). */
  readonly quit: () => Promise<void>
}

/** A notification the extension showed through pi's UI. */
export interface Notice {
  readonly message: string
  readonly type: "info" | "warning" | "error"
}

/** A UI for an SDK session that records notifications and footer statuses; dialogs answer nothing. */
export interface RecordingUI {
  /** The UI to bind, with pi's theme (what pi's own UI-less context has: pi reads it when it binds a UI). */
  readonly ui: (theme: Theme) => ExtensionUIContext
  readonly notices: Array<Notice>
  /** The footer status texts set under each key, in order (`undefined`: cleared). */
  readonly statuses: Array<{ readonly key: string; readonly text: string | undefined }>
  /** Resolves with the first notice, shown already or later, matching `predicate`. */
  readonly nextNotice: (predicate: (notice: Notice) => boolean) => Promise<Notice>
  /** Resolves with the first footer status text under `key`, set already or later, matching `predicate`. */
  readonly nextStatus: (key: string, predicate: (text: string) => boolean) => Promise<string>
}

/** Records what is shown, and resolves a wait for something shown already or as soon as it is. */
const shownLog = <A>() => {
  const shown: Array<A> = []
  let waiting: Array<{ readonly predicate: (a: A) => boolean; readonly resolve: (a: A) => void }> = []
  return {
    shown,
    show: (a: A) => {
      shown.push(a)
      const matched = waiting.filter((w) => w.predicate(a))
      waiting = waiting.filter((w) => !w.predicate(a))
      for (const w of matched) w.resolve(a)
    },
    next: (predicate: (a: A) => boolean): Promise<A> => {
      const found = shown.find(predicate)
      return found !== undefined ? Promise.resolve(found) : new Promise((resolve) => void waiting.push({ predicate, resolve }))
    }
  }
}

/**
 * A recording UI (pi's `ExtensionUIContext`): bound with it, a session has a
 * UI (`ctx.hasUI`), as in the TUI or over RPC. Only `notify` and `setStatus`
 * are recorded; the rest does nothing, and a dialog is dismissed.
 */
export const recordingUI = (): RecordingUI => {
  const notices = shownLog<Notice>()
  const statuses = shownLog<{ readonly key: string; readonly text: string | undefined }>()
  const ui = (theme: Theme): ExtensionUIContext => ({
    select: async () => undefined,
    confirm: async () => false,
    input: async () => undefined,
    notify: (message, type = "info") => notices.show({ message, type }),
    onTerminalInput: () => () => undefined,
    setStatus: (key, text) => statuses.show({ key, text }),
    setWorkingMessage: () => undefined,
    setWorkingVisible: () => undefined,
    setWorkingIndicator: () => undefined,
    setHiddenThinkingLabel: () => undefined,
    setWidget: () => undefined,
    setFooter: () => undefined,
    setHeader: () => undefined,
    setTitle: () => undefined,
    custom: () => new Promise<never>(() => undefined),
    pasteToEditor: () => undefined,
    setEditorText: () => undefined,
    getEditorText: () => "",
    editor: async () => undefined,
    addAutocompleteProvider: () => undefined,
    setEditorComponent: () => undefined,
    getEditorComponent: () => undefined,
    theme,
    getAllThemes: () => [],
    getTheme: () => undefined,
    setTheme: () => ({ success: false, error: "the recording UI has no themes" }),
    getToolsExpanded: () => false,
    setToolsExpanded: () => undefined
  })
  return {
    ui,
    notices: notices.shown,
    statuses: statuses.shown,
    nextNotice: notices.next,
    nextStatus: async (key, predicate) =>
      (await statuses.next((status) => status.key === key && status.text !== undefined && predicate(status.text))).text ?? ""
  }
}

/** Opens a pi session (in memory unless a `sessionManager` is given) with the extension bound. */
export const openPi = async (
  world: World,
  options: {
    readonly sessionManager?: SessionManager
    readonly name?: string
    /** More extensions, loaded after the intercom extension (a test launcher, say). */
    readonly extensionFactories?: ReadonlyArray<ExtensionFactory>
    /**
     * The mode extensions are bound in (default `rpc`). `json`: session_start waits until the session
     * is on the bus, as print and json modes do — a session nobody prompts is reachable once this returns.
     */
    readonly mode?: "rpc" | "json"
    /** A UI to bind (`recordingUI`): the session then has one, as in the TUI or over RPC. None by default. */
    readonly ui?: RecordingUI
  } = {}
): Promise<Pi> => {
  const faux = fauxProvider()
  const calls: Array<ReadonlyArray<Message>> = []
  const events: Array<AgentSessionEvent> = []
  const errors: Array<string> = []
  let watchers: Array<(event: AgentSessionEvent) => boolean> = []
  const createRuntime: CreateAgentSessionRuntimeFactory = async ({ agentDir, cwd, sessionManager, sessionStartEvent }) => {
    const modelRuntime = await ModelRuntime.create({
      authPath: path.join(agentDir, "auth.json"),
      modelsPath: null,
      refreshOnCreate: false
    })
    modelRuntime.registerNativeProvider(faux.provider)
    const services = await createAgentSessionServices({
      cwd,
      agentDir,
      settingsManager: SettingsManager.inMemory(),
      modelRuntime,
      resourceLoaderOptions: {
        additionalExtensionPaths: [EXTENSION, WAIT_TOOL],
        extensionFactories: [...(options.extensionFactories ?? [])],
        noSkills: true,
        noPromptTemplates: true,
        noThemes: true,
        noContextFiles: true
      }
    })
    const created = await createAgentSessionFromServices({
      services,
      sessionManager,
      ...(sessionStartEvent === undefined ? {} : { sessionStartEvent }),
      model: faux.getModel(),
      thinkingLevel: "off",
      noTools: "builtin"
    })
    return { ...created, services, diagnostics: services.diagnostics }
  }
  const runtime = await createAgentSessionRuntime(createRuntime, {
    cwd: world.cwd,
    agentDir: world.agentDir,
    sessionManager: options.sessionManager ?? SessionManager.inMemory(world.cwd)
  })
  let unsubscribe: (() => void) | undefined
  const rebind = async () => {
    unsubscribe?.()
    const session = runtime.session
    unsubscribe = session.subscribe((event) => {
      events.push(event)
      watchers = watchers.filter((watcher) => !watcher(event))
    })
    // "rpc": a long-lived session that idles between prompts (pi's SDK default, "print", runs its prompts and exits).
    await session.bindExtensions({
      mode: options.mode ?? "rpc",
      // Before it is bound, the session's UI is pi's UI-less one: its theme is pi's.
      ...(options.ui === undefined ? {} : { uiContext: options.ui.ui(session.extensionRunner.getUIContext().theme) }),
      onError: (error) => void errors.push(`${error.event}: ${error.error}`)
    })
  }
  // Named before session_start, so the session registers under its name.
  if (options.name !== undefined) runtime.session.sessionManager.appendSessionInfo(options.name)
  await rebind()
  const script: Pi["script"] = (...steps) =>
    faux.appendResponses(steps.map((step): FauxResponseStep => (context) => {
      calls.push([...context.messages])
      return typeof step === "function" ? step(context.messages) : step
    }))
  return {
    runtime,
    faux,
    calls,
    events,
    errors,
    watch: (watcher) => void watchers.push(watcher),
    session: () => runtime.session,
    script,
    rebind,
    quit: async () => {
      unsubscribe?.()
      await runtime.dispose()
    }
  }
}

/** Runs one scripted tool call as a prompt; its result's text and whether pi marked it an error. */
export const actResult = async (pi: Pi, args: JsonObject, tool = "intercom"): Promise<{ text: string; isError: boolean }> => {
  pi.script(call(tool, args), say("ok"))
  await pi.session().prompt(`${tool} ${String(args["action"] ?? "")}`)
  const result = pi.session().messages.filter((message) => message.role === "toolResult").at(-1)
  return { text: result === undefined ? "" : textOf(result), isError: result !== undefined && "isError" in result && result.isError === true }
}

/** Runs one scripted tool call as a prompt and returns its result's text. */
export const act = async (pi: Pi, args: JsonObject, tool = "intercom"): Promise<string> =>
  (await actResult(pi, args, tool)).text

/** The tool results of a session's transcript, as text. */
export const toolResults = (session: AgentSession): ReadonlyArray<string> =>
  session.messages.filter((message) => message.role === "toolResult").map(textOf)

/** The ids of the sessions the last `list` result of a session named. */
export const listedIds = (session: AgentSession): ReadonlyArray<string> => {
  const result = session.messages.filter((message) => message.role === "toolResult").at(-1)
  const details: unknown = result !== undefined && "details" in result ? result.details : undefined
  const sessions: unknown = typeof details === "object" && details !== null ? Reflect.get(details, "sessions") : undefined
  return Array.isArray(sessions)
    ? sessions.flatMap((info: unknown) => {
      const id: unknown = typeof info === "object" && info !== null ? Reflect.get(info, "id") : undefined
      return typeof id === "string" ? [id] : []
    })
    : []
}

/** The custom entries of a session with `customType`. */
export const entriesOf = (session: AgentSession, customType: string): ReadonlyArray<unknown> =>
  session.sessionManager.getEntries().flatMap((entry) =>
    entry.type === "custom" && entry.customType === customType ? [entry.data] : []
  )

/** The intercom custom messages in a session's transcript. */
export const intercomMessages = (session: AgentSession): ReadonlyArray<string> =>
  session.messages.filter((message) => message.role === "custom" && message.customType === "intercom_message")
    .map(textOf)

/** Resolves on the first later event of `pi` (across session replacements) matching `predicate`. */
export const nextEvent = (
  pi: Pi,
  predicate: (event: AgentSessionEvent) => boolean
): Promise<AgentSessionEvent> =>
  new Promise((resolve) =>
    pi.watch((event) => {
      if (!predicate(event)) return false
      resolve(event)
      return true
    })
  )
