package chaos

import "time"

// WaitProgress calls poll every interval until it reports done, and gives
// up only when the progress it reports (a number that grows as the work
// moves: checkpoints, folds, messages handled, minus what is left to do)
// has not passed its highest value for stall. It returns how long it
// waited and whether poll reported done.
//
// A chaos test waits with it for its relays or workers to catch up: how
// long that takes depends on the machine's load (a catch-up that takes
// 20 s on an idle machine can take minutes on a loaded one), so a fixed
// limit fails on a busy machine, while a catch-up that stopped moving
// fails here whatever the load.
func WaitProgress(stall, interval time.Duration, poll func() (progress int64, done bool)) (time.Duration, bool) {
	start := time.Now()
	best, moved := int64(0), start
	for first := true; ; first = false {
		progress, done := poll()
		if done {
			return time.Since(start), true
		}
		if first || progress > best {
			best, moved = progress, time.Now()
		}
		if time.Since(moved) > stall {
			return time.Since(start), false
		}
		time.Sleep(interval)
	}
}
