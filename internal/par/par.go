// Package par runs a loop's iterations in parallel when there are enough
// of them to pay for it.
package par

import (
	"runtime"
	"sync"
)

// Do calls f(0) … f(n-1), spread over the CPUs when n is large enough for
// that to pay: reading a big mailbox is mostly waiting on system calls.
func Do(n int, f func(int)) {
	workers := min(runtime.GOMAXPROCS(0)*2, n/64)
	if workers < 2 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				f(i)
			}
		})
	}
	wg.Wait()
}
