// Package importrules holds only a test: it checks every package of the
// module against the import rules of the architecture (which library
// package may import which, and which third-party modules the module may
// use at all). It has no code to import.
package importrules
