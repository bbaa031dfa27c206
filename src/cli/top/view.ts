/**
 * What `intercom top` shows, as plain text: a pure function of the broker's
 * snapshot (`observe-v1`), the view's settings (sort column, filter) and the
 * screen size. Times are shown relative to the snapshot's own clock
 * (`snapshot.at`), so the view needs no clock of its own and a test can
 * render any snapshot.
 */
import type { BrokerSnapshot, OpenAsk, RefusalEntry, SessionRow } from "../../observe/Snapshot.ts"
import { healthOf } from "../../observe/Snapshot.ts"
import { terminalSafe } from "../terminalText.ts"
import { cutToWidth, fitToWidth } from "../terminalWidth.ts"

/** The columns `s` cycles through, in order. */
export const SORT_COLUMNS = ["activity", "name", "group", "status", "asks", "rate"] as const
/** A sort column of the sessions table. */
export type SortColumn = (typeof SORT_COLUMNS)[number]

/** How long an ask may stay open before the view marks it as stuck, in ms. */
export const STUCK_ASK_MS = 60_000

/** The view's settings, changed from the keyboard (keys.ts). */
export interface ViewSettings {
  readonly sort: SortColumn
  /** Sessions whose name, id, group or status contain it (ignoring case); asks and refusals that name one. */
  readonly filter: string
  /** The filter being typed after `/` (undefined when not editing). */
  readonly editing: string | undefined
}

/** A view with no filter, sorted by last activity. */
export const initialSettings: ViewSettings = { sort: "activity", filter: "", editing: undefined }

/** `1h02m`, `3m05s`, `12s`, `0s` for a duration in ms. */
export const formatAge = (ms: number): string => {
  const seconds = Math.max(0, Math.floor(ms / 1000))
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, "0")}s`
  const hours = Math.floor(minutes / 60)
  if (hours < 48) return `${hours}h${String(minutes % 60).padStart(2, "0")}m`
  return `${Math.floor(hours / 24)}d`
}

const formatChars = (chars: number): string =>
  chars < 1024 ? `${chars} B` : chars < 1_048_576 ? `${(chars / 1024).toFixed(1)} KB` : `${(chars / 1_048_576).toFixed(1)} MB`

/** A party's name (else its id), made safe for the terminal. */
const nameOf = (party: { readonly id: string; readonly name?: string | undefined }): string =>
  terminalSafe(party.name ?? party.id)

const contains = (text: string | undefined, needle: string): boolean =>
  text !== undefined && text.toLowerCase().includes(needle)

const rowMatches = (row: SessionRow, needle: string): boolean =>
  needle === "" || contains(row.name, needle) || contains(row.id, needle) || contains(row.group, needle) ||
  contains(row.status, needle)

const partyMatches = (party: { readonly id: string; readonly name?: string | undefined }, needle: string): boolean =>
  needle === "" || contains(party.name, needle) || contains(party.id, needle)

const compareRows = (sort: SortColumn) => (a: SessionRow, b: SessionRow): number => {
  switch (sort) {
    case "activity":
      return b.lastActivity - a.lastActivity
    case "name":
      return (a.name ?? a.id).localeCompare(b.name ?? b.id)
    case "group":
      return a.group.localeCompare(b.group) || (a.name ?? a.id).localeCompare(b.name ?? b.id)
    case "status":
      return (a.status ?? "").localeCompare(b.status ?? "") || (a.name ?? a.id).localeCompare(b.name ?? b.id)
    case "asks":
      return b.pendingAsks - a.pendingAsks || b.waitingAsks - a.waitingAsks
    case "rate":
      return b.ratePerSec - a.ratePerSec
  }
}

/** Makes `text` safe for the terminal, then cuts or pads it to exactly `width` columns (wide characters take two). */
const cell = (raw: string, width: number): string => fitToWidth(terminalSafe(raw), width)

const SESSION_COLUMNS: ReadonlyArray<readonly [string, number]> = [
  ["NAME", 18],
  ["GROUP", 10],
  ["STATUS", 10],
  ["HEALTH", 8],
  ["ASKED", 6],
  ["WAITS", 6],
  ["IN", 7],
  ["OUT", 7],
  ["MSG/S", 7],
  ["LAST ACTIVITY", 13]
]

const sessionLine = (row: SessionRow, now: number): string =>
  [
    row.name ?? row.id,
    row.group,
    row.status ?? "-",
    healthOf(row, now),
    String(row.pendingAsks),
    String(row.waitingAsks),
    String(row.messagesIn),
    String(row.messagesOut),
    row.ratePerSec.toFixed(1),
    row.lastActivity === 0 ? "never" : `${formatAge(now - row.lastActivity)} ago`
  ].map((text, i) => cell(text, SESSION_COLUMNS[i]![1])).join(" ")

const askLine = (ask: OpenAsk, now: number): string => {
  const age = ask.askedAt === undefined ? undefined : now - ask.askedAt
  const stuck = age !== undefined && age >= STUCK_ASK_MS
  return `${stuck ? "!" : " "} ${nameOf(ask.from)} → ${nameOf(ask.to)}  ${terminalSafe(ask.messageId)}  age ${
    age === undefined ? "?" : formatAge(age)
  }  closes in ${formatAge(ask.deadline - now)}${stuck ? "  STUCK" : ""}`
}

const refusalLine = (refusal: RefusalEntry, now: number): string =>
  `  ${formatAge(now - refusal.at)} ago  ${nameOf(refusal.from)} → ${terminalSafe(refusal.to)}  ${
    terminalSafe(refusal.code)
  }  ${terminalSafe(refusal.messageId)}`

/**
 * The screen for `snapshot`: header, totals and queues, the sessions table,
 * open asks, recent refusals and the key help (left out with `keyHelp`
 * false: `top --once` reads no keys), cut to `rows` lines of `columns` characters (a section gives up lines to the ones above it).
 * With `silentForMs` (the broker has sent nothing for that long: stopped,
 * hung or overloaded) the header starts with a line that says so, and that
 * what follows is its last update.
 */
export const render = (
  snapshot: BrokerSnapshot,
  settings: ViewSettings,
  size: { readonly columns: number; readonly rows: number },
  title: string,
  silentForMs?: number,
  keyHelp = true
): ReadonlyArray<string> => {
  const now = snapshot.at
  const needle = settings.filter.toLowerCase()
  const { totals, queues } = snapshot
  const routed = totals.delivered + totals.queued + totals.staged
  const header = [
    ...(silentForMs === undefined ? [] : [
      `!! NOT ANSWERING: no update from the broker for ${
        formatAge(silentForMs)
      } (stopped, hung or overloaded?); below is its last update`
    ]),
    `${title}  up ${formatAge(now - snapshot.startedAt)}`,
    `sessions ${snapshot.sessionCount}  routed ${routed} (${snapshot.rate.routedPerSec.toFixed(1)}/s)  delivered ${totals.delivered}  queued ${totals.queued}  staged ${totals.staged}  refused ${totals.refused}  open asks ${snapshot.askCount}`,
    `queues: mailbox ${queues.mailbox}  staged ${queues.staged}  outbox ${formatChars(queues.outboxChars)}  unregistered ${queues.unregistered}`,
    ""
  ]
  const rows = snapshot.sessions.filter((row) => rowMatches(row, needle)).sort(compareRows(settings.sort))
  const table = [
    SESSION_COLUMNS.map(([label, width]) => cell(label, width)).join(" "),
    ...rows.map((row) => sessionLine(row, now)),
    ...(snapshot.sessionCount > snapshot.sessions.length
      ? [`  (${snapshot.sessionCount - snapshot.sessions.length} less active sessions not shown)`]
      : [])
  ]
  const asks = snapshot.asks.filter((ask) => partyMatches(ask.from, needle) || partyMatches(ask.to, needle))
  const refusals = snapshot.refusals.filter((refusal) => partyMatches(refusal.from, needle) || contains(refusal.to, needle))
  const askSection = [
    "",
    `OPEN ASKS (${snapshot.askCount})`,
    ...(asks.length === 0 ? ["  none"] : asks.map((ask) => askLine(ask, now)))
  ]
  const refusalSection = [
    "",
    `RECENT REFUSALS (${totals.refused} in all)`,
    ...(refusals.length === 0 ? ["  none"] : refusals.slice().reverse().map((refusal) => refusalLine(refusal, now)))
  ]
  const footer = !keyHelp ? [] : [
    "",
    settings.editing !== undefined
      ? `filter: ${terminalSafe(settings.editing)}▏  (Enter keeps it, Esc clears it)`
      : `keys: s sort (${settings.sort})  / filter${
        settings.filter === "" ? "" : ` ("${terminalSafe(settings.filter)}")`
      }  q quit`
  ]
  const budget = Math.max(size.rows, 10) - header.length - footer.length
  // Each section gets at least a few lines; what is left goes to the sessions table first.
  const minimum = (section: ReadonlyArray<string>) => Math.min(section.length, 4)
  const tableLines = Math.max(minimum(table), budget - minimum(askSection) - minimum(refusalSection))
  const shownTable = table.slice(0, tableLines)
  const askLines = Math.max(0, Math.min(askSection.length, budget - shownTable.length - minimum(refusalSection)))
  const shownAsks = askSection.slice(0, askLines)
  const shownRefusals = refusalSection.slice(0, Math.max(0, budget - shownTable.length - shownAsks.length))
  const width = Math.max(size.columns, 20)
  return [...header, ...shownTable, ...shownAsks, ...shownRefusals, ...footer].map((line) =>
    cutToWidth(line, width)
  )
}
