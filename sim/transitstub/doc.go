// Package transitstub simulates reconciliation time on a virtual Internet.
package transitstub
