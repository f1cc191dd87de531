library(parallel)

repeat {
  mcparallel({
    while (TRUE) NULL
  })
}
