// Package cliutil is what the commands of the reconcile program share, so
// that the transfer commands (package main) and the lab commands (packages
// lab*) look and fail alike: the app around them (NewApp, Run: --verbose,
// one-line errors and their exit codes), flag helpers (sizes in IEC units,
// lower bounds), progress bars and lines on standard error, JSON output,
// log lines, CPU profiles and work folders, and help pages that fit in
// HelpWidth columns.
//
// Exit status of a command run by Run: ExitOK (0) on success, ExitFailure
// (1) when it fails, ExitUsage (2) for a mistake on the command line (an
// unknown command or flag, a value out of range), and 128 plus the signal
// (130 for Ctrl-C, 143 for SIGTERM) when a signal cut its work short.
package cliutil
