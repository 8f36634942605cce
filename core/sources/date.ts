// Owns the `core/date` Context Source: the calendar date, host-local by default or
// in a configured IANA time zone. It changes only when the calendar date changes.

import Type from "typebox";
import type { Clock } from "../base/clock.ts";
import { SettingInvalid } from "../base/errors.ts";
import { make } from "../system-context/index.ts";
import type { CoreSource } from "./core-source.ts";

/** Checks an IANA time zone name; throws `SettingInvalid` naming it and the setting. */
export function checkTimeZone(timeZone: string, setting = "timeZone"): string {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone }).resolvedOptions().timeZone;
  } catch {
    throw new SettingInvalid({
      setting,
      reason: `unknown time zone ${JSON.stringify(timeZone)} (expected an IANA name such as "Europe/Oslo")`,
    });
  }
}

/** The calendar date `YYYY-MM-DD` of `epochMs` in `timeZone` (host-local when undefined). */
export function calendarDate(epochMs: number, timeZone: string | undefined): string {
  const parts = new Intl.DateTimeFormat("en-US", {
    ...(timeZone === undefined ? {} : { timeZone }),
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
  }).formatToParts(new Date(epochMs));
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? "";
  return `${part("year")}-${part("month")}-${part("day")}`;
}

const DateValue = Type.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$" });

/** The `core/date` source. */
export function dateSource(options: { clock: Clock; timeZone?: string }): CoreSource {
  const timeZone = options.timeZone === undefined ? undefined : checkTimeZone(options.timeZone);
  const where = timeZone === undefined ? "" : ` (${timeZone})`;
  const context = make({
    key: "core/date",
    schema: DateValue,
    load: () => calendarDate(options.clock.now(), timeZone),
    baseline: (date) => `Today's date is ${date}${where}.`,
    update: (_previous, date) => `The date is now ${date}${where}.`,
  });
  return { key: "core/date", load: () => context };
}
