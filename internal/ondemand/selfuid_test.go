package ondemand

import "os"

func selfUID() int { return os.Getuid() }
