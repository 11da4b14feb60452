// Package release holds no code: it is where the release build is tested.
// The build itself is .goreleaser.yaml at the top of the module (six
// binaries for linux and macOS on amd64 and arm64, tar.gz archives, deb
// and rpm packages, a checksums file, the version stamped into each
// binary), and install.sh installs a release from a base URL or a local
// archive, refusing one whose checksum does not match. install_test.go
// runs install.sh against archives it makes; .ci/release builds a real
// snapshot with goreleaser and installs it with install.sh.
package release
