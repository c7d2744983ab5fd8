// The counters example; see issue 5.
