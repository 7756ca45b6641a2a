// Package results records what a urlcheck job found: one Result per input
// line, streamed to <dir>/results.jsonl and <dir>/results.csv by a Writer
// (both files sorted by input line once the Writer is closed), and a Tally
// that aggregates the job into the Summary written to <dir>/summary.json.
//
// Classes are plain strings here so that this package does not depend on the
// checker; Classes lists the known ones in their canonical order and Broken
// says which of them count as broken links.
package results
