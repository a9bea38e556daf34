package e2e

// Filled in below.
func hive4ClientAdapterRows() []adapterRow { return nil }
