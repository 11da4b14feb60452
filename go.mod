module github.com/mailfs/mailfs

go 1.25.0

require (
	github.com/alecthomas/kong v1.17.0
	github.com/fsnotify/fsnotify v1.10.1
	github.com/rogpeppe/go-internal v1.16.0
	golang.org/x/sys v0.47.0
)

require golang.org/x/tools v0.26.0 // indirect
