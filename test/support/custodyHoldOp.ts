/**
 * The simulation's custody-hold op as the scripted tests run it (custody-hold,
 * controls): B's writes take 1.5 s and the broker does not read B for 6 s;
 * D sends B two, B is taken over, D sends one, stops and is back 10 ms
 * later. Tests spread it and change what they vary.
 */
import type { CustodyHoldDraw } from "../../src/testing/simulation/custodyHold.ts"

/** The op with the draws the scripted tests start from. */
export const scriptedCustodyHold: CustodyHoldDraw = {
  _tag: "CustodyHold",
  after: 100,
  recipient: 1,
  sender: 3,
  count: 2,
  delayMs: 1500,
  stallMs: 6000,
  leave: "stop",
  returnMs: 10,
  more: 1,
  notSession: []
}
