module github.com/waitroom/waitroom

go 1.26.8
