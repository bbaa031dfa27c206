/**
 * bench/durable-path.ts's choice of how to call a build's StoreJournal.mailGone
 * (bench/journalApi.ts): this build's is called by sender and id, whatever
 * optional parameters it has grown (review revmailkey2 probe 4). Pure check.
 */
import { assert, describe, it } from "@effect/vitest"
import { mailGoneBySenderAndId } from "../../bench/journalApi.ts"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"

describe("mailGoneBySenderAndId", () => {
  it("reads this build's StoreJournal.mailGone as taking a sender and an id", () => {
    assert.isTrue(mailGoneBySenderAndId(StoreJournal.prototype.mailGone))
  })

  it("reads a one-parameter mailGone as the record-key form before the eighth stop", () => {
    assert.isFalse(mailGoneBySenderAndId((recordKey: string) => recordKey.length))
  })
})
