package postgres_test

import (
	"time"

	"github.com/pabloagent/pablo/internal/clock"
)

// testClock is the module's one test clock: time moves only when a test
// says so (Move), and the renewer's timers fire only when it fires them
// (Fire).
type testClock = clock.Manual

func newTestClock() *testClock { return clock.NewManual(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)) }
