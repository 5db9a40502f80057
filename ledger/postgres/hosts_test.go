package postgres_test

func runHostChild() int { return 2 }
