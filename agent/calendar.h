/* calendar.h - PVE's calendar events (the schedule syntax of vzdump and
 * replication jobs, PVE::CalendarEvent / proxmox-time): parsing and the
 * next occurrence in local time. Pure (the time zone is the process's).
 *
 *   [WEEKDAYS] [[YEARS-]MONTHS-DAYS] [HOURS:]MINUTES[:SECONDS]
 *
 * WEEKDAYS: sun..sat, lists with ',' and ranges with '..' ("mon..fri",
 * "sat,sun"); omitted: every day. Date and time fields: '*', N, N..M,
 * lists, and repetition START/STEP ("*\/15", "8/2", "0..23/6"); an omitted
 * date is every day, omitted hours are '*' ("30": minute 30 of every
 * hour), omitted seconds 0. Weekdays alone mean 00:00. Named events:
 * minutely, hourly, daily, weekly, monthly, yearly (annually), quarterly,
 * semiannually. Examples: "sun 02:00", "mon..fri 22:30", "*-*-01 03:00",
 * "sat *-1..7 15:00" (first Saturday), "*\/30". */
#ifndef PVAGENT_CALENDAR_H
#define PVAGENT_CALENDAR_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct cal_event {
	uint8_t weekdays;    /* bit d: 0 Sunday .. 6 Saturday */
	uint16_t months;     /* bit m: 1..12 */
	uint32_t days;       /* bit d: 1..31 */
	uint32_t hours;      /* bit h: 0..23 */
	uint64_t minutes;    /* bit m: 0..59 */
	uint64_t seconds;    /* bit s: 0..59 */
	int year_from, year_to, year_step; /* year_from 0: every year */
};

/* Parse s. 0, or -1 with *why (static text) saying what is wrong. */
int cal_parse(const char *s, struct cal_event *out, const char **why);

/* The first time strictly after `after` that matches (local time, to the
 * second), within 10 years. 0, or -1 when there is none. */
int cal_next(const struct cal_event *e, time_t after, time_t *next);

#endif
