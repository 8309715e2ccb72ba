module example.com/fakesuite

go 1.22
