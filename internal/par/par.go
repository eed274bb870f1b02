// Package par runs independent pieces of work on a bounded number of
// goroutines.
package par

import "sync"

// Do calls fn(i) for every i in [0, n) on at most w goroutines and returns
// when all calls have returned. Calls run in no particular order; fn must
// be safe to call concurrently. w < 1 is taken as 1.
func Do(n, w int, fn func(i int)) {
	if n <= 0 {
		return
	}
	w = max(1, min(w, n))
	var wg sync.WaitGroup
	next := make(chan int)
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
