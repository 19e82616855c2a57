from advisor.command import main

main()
