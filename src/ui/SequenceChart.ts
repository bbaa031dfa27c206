/**
 * The sequence chart of `intercom ui`: recent traffic between sessions as
 * an SVG string, one lifeline per lane (a session, told apart by its group
 * and name; or another target) and one arrow per routed message, oldest at
 * the top.
 *
 * Pure: the same rows give the same markup, so tests read it as text. Every
 * name, id and outcome is escaped (`escapeXml`): session names are chosen by
 * whoever registers, and the page inserts this markup as it is. Colours come
 * from the page's style sheet through class names (`ask`, `reply`,
 * `message`, `stuck`, `refused`), not inline styles, which the page's
 * Content-Security-Policy would block.
 */

/**
 * One lifeline of the chart. Its `key` tells lanes apart (View.ts keys a
 * live session's lane by its group and name, so two sessions of one name in
 * different groups get two lanes); `name` is shown at its top, with `group`
 * on a second line when it is set (when its name alone is ambiguous).
 */
export interface ChartLane {
  readonly key: string
  readonly name: string
  readonly group: string | undefined
}

/** How a lane is named in text: its name, and its group when it has one (`worker · review`). */
export const laneLabel = (lane: ChartLane): string => lane.group === undefined ? lane.name : `${lane.name} · ${lane.group}`

/** One arrow of the chart. */
export interface ChartRow {
  /** When the broker routed it (ms since the epoch). */
  readonly at: number
  /** The lane it starts on. */
  readonly from: ChartLane
  /** The lane it ends on; for a refused message, a lane of the target as the sender named it. */
  readonly to: ChartLane
  readonly kind: "message" | "ask" | "reply"
  readonly messageId: string
  /** What the arrow says besides its kind and id, e.g. `answered in 1.2 s`, `E_NOT_FOUND`. */
  readonly note: string
  /** An ask still open past the stuck threshold. */
  readonly stuck: boolean
  /** Not delivered or queued: refused by the broker. */
  readonly refused: boolean
}

/** The width of one session's lane, in SVG user units (pixels). */
export const LANE_WIDTH = 170
/** The height of one arrow's row, in SVG user units (pixels). */
export const ROW_HEIGHT = 24
const TIME_COLUMN = 78
/** The height above the first arrow: one line of lane names, or two when a lane shows its group. */
const HEADER = 34
const HEADER_WITH_GROUPS = 46
const MARGIN = 12

/** Escapes text for use in SVG/XML content and attribute values. */
export const escapeXml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === '"' ? "&quot;" : "&#39;")

const shortId = (id: string): string => id.length > 8 ? id.slice(0, 8) : id

const clock = (at: number): string => {
  const d = new Date(at)
  const pad = (n: number, w = 2) => String(n).padStart(w, "0")
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
}

const truncate = (text: string, max: number): string => text.length > max ? `${text.slice(0, max - 1)}…` : text

/**
 * The lanes of the chart: `sessions` in their order, then any other lane
 * the rows use (a departed session, a refused target), in order of first
 * use; one per key.
 */
export const lanesOf = (sessions: ReadonlyArray<ChartLane>, rows: ReadonlyArray<ChartRow>): ReadonlyArray<ChartLane> => {
  const lanes: Array<ChartLane> = []
  const seen = new Set<string>()
  const add = (lane: ChartLane) => {
    if (seen.has(lane.key)) return
    seen.add(lane.key)
    lanes.push(lane)
  }
  for (const lane of sessions) add(lane)
  for (const row of rows) {
    add(row.from)
    add(row.to)
  }
  return lanes
}

/** A filled arrow head whose tip is at (x, y), pointing right (`direction` 1) or left (-1), in the arrow's colour. */
const arrowHead = (x: number, y: number, direction: number): string =>
  `<path class="head" d="M${x},${y} l${-9 * direction},-4.5 v9 z" fill="currentColor"/>`

/** The chart's SVG markup for `rows` (oldest first) over `lanes`. */
export const renderChart = (lanes: ReadonlyArray<ChartLane>, rows: ReadonlyArray<ChartRow>): string => {
  const x = new Map(lanes.map((lane, index) => [lane.key, TIME_COLUMN + MARGIN + LANE_WIDTH * index + LANE_WIDTH / 2]))
  const header = lanes.some((lane) => lane.group !== undefined) ? HEADER_WITH_GROUPS : HEADER
  const width = TIME_COLUMN + MARGIN * 2 + LANE_WIDTH * Math.max(lanes.length, 1)
  const height = header + ROW_HEIGHT * Math.max(rows.length, 1) + MARGIN
  const parts: Array<string> = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="sequence" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="sequence chart of recent traffic">`,
  ]
  lanes.forEach((lane, index) => {
    const lx = TIME_COLUMN + MARGIN + LANE_WIDTH * index + LANE_WIDTH / 2
    parts.push(
      `<text class="lane-name" x="${lx}" y="18" text-anchor="middle" font-weight="600"><title>${escapeXml(laneLabel(lane))}</title>${
        escapeXml(truncate(lane.name, 24))
      }</text>`,
      ...(lane.group === undefined ? [] : [
        `<text class="lane-group" x="${lx}" y="31" text-anchor="middle" font-size="11" fill="#888">${escapeXml(truncate(lane.group, 26))}</text>`
      ]),
      `<line class="lifeline" x1="${lx}" y1="${header - 8}" x2="${lx}" y2="${height - MARGIN / 2}" stroke="#8888" stroke-dasharray="4 4"/>`
    )
  })
  if (rows.length === 0) {
    parts.push(`<text class="empty" x="${MARGIN}" y="${header + 16}" fill="#888">no traffic yet</text>`)
  }
  rows.forEach((row, index) => {
    const y = header + ROW_HEIGHT * index + ROW_HEIGHT - 6
    const x1 = x.get(row.from.key) ?? TIME_COLUMN
    const x2 = x.get(row.to.key) ?? TIME_COLUMN
    const classes = ["arrow", row.kind, ...(row.stuck ? ["stuck"] : []), ...(row.refused ? ["refused"] : [])].join(" ")
    const label = `${row.kind} ${shortId(row.messageId)}${row.note === "" ? "" : ` · ${row.note}`}`
    const dash = row.kind === "reply" ? ` stroke-dasharray="6 3"` : ""
    parts.push(
      `<g class="${classes}" data-message-id="${escapeXml(row.messageId)}" data-kind="${row.kind}">`,
      `<title>${escapeXml(`${laneLabel(row.from)} → ${laneLabel(row.to)}: ${label}`)}</title>`,
      `<text class="time" x="${MARGIN}" y="${y + 4}" fill="#888" font-size="11">${clock(row.at)}</text>`
    )
    if (x1 === x2) {
      // A message to oneself: a small loop on the lifeline.
      parts.push(
        `<path d="M${x1},${y - 8} h24 v8 h-22" fill="none" stroke="currentColor"${dash}/>`,
        arrowHead(x1, y, -1),
        `<text x="${x1 + 30}" y="${y - 1}" font-size="11">${escapeXml(label)}</text>`
      )
    } else {
      const mid = (x1 + x2) / 2
      parts.push(
        `<line x1="${x1}" y1="${y}" x2="${x2 - Math.sign(x2 - x1) * 8}" y2="${y}" stroke="currentColor" stroke-width="${row.stuck ? 2.5 : 1.5}"${dash}/>`,
        arrowHead(x2, y, Math.sign(x2 - x1)),
        `<text x="${mid}" y="${y - 4}" text-anchor="middle" font-size="11">${escapeXml(label)}</text>`
      )
    }
    parts.push(`</g>`)
  })
  parts.push(`</svg>`)
  return parts.join("")
}
