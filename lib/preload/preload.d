preload/preload.o: preload/preload.c
