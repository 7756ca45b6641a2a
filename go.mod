module github.com/urlcheck/urlcheck

go 1.26.8

require golang.org/x/net v0.62.0 // indirect
