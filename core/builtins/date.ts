// Owns the `core/date` Context Source: the calendar date, host-local by default or
// in a configured IANA time zone. It changes only when the calendar date changes.

import Type from "typebox";
import type { CoreSource } from "../host.ts";
import type { Clock } from "../plugins/services.ts";
import { make } from "../system-context/index.ts";

/** A setting has a value the host cannot use; names the setting and the value. */
export class SettingError extends Error {
  override readonly name = "SettingError";
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(`setting ${setting}: ${message}`);
  }
}

/** Checks an IANA time zone name; throws `SettingError` naming it and the setting. */
export function checkTimeZone(timeZone: string, setting = "timeZone"): string {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone }).resolvedOptions().timeZone;
  } catch {
    throw new SettingError(
      setting,
      `unknown time zone ${JSON.stringify(timeZone)} (expected an IANA name such as "Europe/Oslo")`,
    );
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
