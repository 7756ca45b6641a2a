// Package urllist reads the list of URLs to check, in plain text, CSV or JSON,
// and streams it as Entries: each URL with its input line number, normalized
// form (see urlnorm.Normalize), host and rate-limit key, or the reason it is
// invalid. Invalid lines are reported as entries rather than aborting the
// read, so that a report can name every bad line of a million-line list.
package urllist
