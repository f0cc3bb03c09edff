//go:build !stress

package store

const defaultCrashIterations = 20
